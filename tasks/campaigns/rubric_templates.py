"""Starting rubrics for common kinds of task, offered by the campaign form's rubric builder.

Each is written as a definition file would write it and goes through the same reader
(tasks.campaigns.definition.rubric_validate) as anything typed; tests check every one of them. The
anchors describe each point, so two reviewers reading "3" read the same thing.
"""

from __future__ import annotations

DEFAULT_TEMPLATE = "general"

_ACCURACY = {
    "key": "accuracy",
    "label": "Accuracy",
    "description": "Is what the answer states true and correct for this task?",
    "anchors": {
        "1": "wrong: the main claim or result is incorrect",
        "2": "mostly wrong: a correct part, but a serious error",
        "3": "partly right: a clear error or unsupported claim",
        "4": "right, with a minor slip that changes little",
        "5": "fully correct",
    },
}

TEMPLATES: dict[str, dict] = {
    "general": {
        "name": "General answer quality",
        "summary": "accuracy, completeness, clarity: any question-answering task",
        "rubric": [
            _ACCURACY,
            {
                "key": "completeness",
                "label": "Completeness",
                "description": "Does it answer everything the task asks?",
                "anchors": {
                    "1": "misses the question",
                    "2": "answers a small part",
                    "3": "answers the main part, misses some",
                    "4": "answers all, one detail thin",
                    "5": "covers everything asked",
                },
            },
            {
                "key": "clarity",
                "label": "Clarity",
                "description": "Is it easy to read and to act on, without padding?",
                "anchors": {
                    "1": "confusing or unreadable",
                    "2": "hard to follow",
                    "3": "understandable with effort",
                    "4": "clear, a little long or loose",
                    "5": "clear and to the point",
                },
            },
        ],
    },
    "coding": {
        "name": "Coding",
        "summary": "correctness, edge cases, code quality, explanation",
        "rubric": [
            {
                "key": "correctness",
                "label": "Correctness",
                "description": "Would the code run and do what was asked?",
                "anchors": {
                    "1": "does not run or solves another problem",
                    "2": "runs, wrong on ordinary input",
                    "3": "right on ordinary input, a real bug remains",
                    "4": "right, one minor flaw",
                    "5": "correct",
                },
            },
            {
                "key": "edge_cases",
                "label": "Edge cases",
                "description": "Empty input, limits, errors, unusual values.",
                "anchors": {
                    "1": "ignored: breaks on the first unusual input",
                    "3": "the obvious ones handled",
                    "5": "handled throughout, or rightly out of scope",
                },
            },
            {
                "key": "code_quality",
                "label": "Code quality",
                "description": "Readable, idiomatic, no needless complexity.",
                "anchors": {
                    "1": "hard to read or maintain",
                    "3": "acceptable, some clutter",
                    "5": "clean and idiomatic",
                },
            },
            {
                "key": "explanation",
                "label": "Explanation",
                "description": "Is the accompanying text accurate and useful? N/A when the task "
                "asked for code only.",
                "anchors": {"1": "misleading", "3": "adequate", "5": "accurate and helpful"},
                "allow_na": True,
            },
        ],
    },
    "summarisation": {
        "name": "Summarisation",
        "summary": "faithfulness, coverage, concision",
        "rubric": [
            {
                "key": "faithfulness",
                "label": "Faithfulness",
                "description": "Does every statement follow from the source? Anything invented "
                "or distorted counts against it.",
                "anchors": {
                    "1": "invents or contradicts key facts",
                    "2": "several unsupported statements",
                    "3": "one unsupported or distorted statement",
                    "4": "faithful, one loose wording",
                    "5": "everything follows from the source",
                },
                "max_gap": 0,
            },
            {
                "key": "coverage",
                "label": "Coverage",
                "description": "Are the source's main points there?",
                "anchors": {
                    "1": "misses the main point",
                    "3": "main point, misses others that matter",
                    "5": "every point that matters",
                },
            },
            {
                "key": "concision",
                "label": "Concision",
                "description": "Short for what it covers, no repetition or filler.",
                "anchors": {
                    "1": "longer than useful, repetitive",
                    "3": "some filler",
                    "5": "tight",
                },
            },
        ],
    },
    "support": {
        "name": "Customer support",
        "summary": "resolution, policy, tone, next steps",
        "rubric": [
            {
                "key": "resolution",
                "label": "Resolution",
                "description": "Does the reply solve the customer's problem, correctly?",
                "anchors": {
                    "1": "wrong or unhelpful",
                    "2": "on topic, does not solve it",
                    "3": "partly solves it",
                    "4": "solves it, one step unclear",
                    "5": "solves it correctly",
                },
            },
            {
                "key": "policy",
                "label": "Policy compliance",
                "description": "Does it keep to the company's rules (refunds, promises, data)?",
                "anchors": {"0": "breaks a rule", "1": "within policy"},
                "min": 0,
                "max": 1,
                "level": "nominal",
                "max_gap": 0,
            },
            {
                "key": "tone",
                "label": "Tone",
                "description": "Polite, calm, acknowledges the customer.",
                "anchors": {
                    "1": "rude or dismissive",
                    "3": "neutral",
                    "5": "warm and professional",
                },
            },
            {
                "key": "next_steps",
                "label": "Next steps",
                "description": "Does the customer know what to do or what happens next?",
                "anchors": {"1": "left guessing", "3": "roughly", "5": "clear next steps"},
                "allow_na": True,
            },
        ],
    },
    "extraction": {
        "name": "Extraction",
        "summary": "field accuracy, errors counted (lower is better), format",
        "rubric": [
            {
                "key": "field_accuracy",
                "label": "Field accuracy",
                "description": "Are the extracted values the ones in the source?",
                "anchors": {
                    "1": "most values wrong",
                    "3": "about half right",
                    "5": "every value right",
                },
            },
            {
                "key": "errors",
                "label": "Wrong or missing fields",
                "description": "How many fields are wrong, missing or invented (5 = five or more).",
                "min": 0,
                "max": 5,
                "anchors": {"0": "none", "1": "one", "5": "five or more"},
                "level": "ratio",
                "direction": "lower",
            },
            {
                "key": "format",
                "label": "Format",
                "description": "Does the output follow the requested format (JSON, columns, "
                "names)?",
                "anchors": {"0": "not usable as asked", "1": "as requested"},
                "min": 0,
                "max": 1,
                "level": "nominal",
                "max_gap": 0,
            },
        ],
    },
}
