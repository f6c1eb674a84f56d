"""The built-in words that tell a reviewer which model wrote an answer.

Kept as data, one list per kind, so adding a model family or a vendor is one line here (and
a case in tests/reviews/blinding_corpus.jsonl). These are what the maintained dataset
(genai-prices, read by tasks/blinding/catalog.py) lacks or needs said: transliterations,
consumer products, SDK and host names, and which names are also ordinary words. The masker (tasks/blinding/render.py) matches them
on the text's normalized view (tasks/blinding/skeleton.py), so each is written once, in its usual
spelling: case, look-alike letters, invisible characters and the separators between letters
are taken care of there.

Rules the lists follow:
- A common word is never a term on its own. Names that are also ordinary words or people's
  names (AMBIGUOUS: "Claude", "Llama", "GLM", "Command") are masked only in a model's
  context (a version or a size after them, an AI word or a self-description near them, a
  vendor beside them) and held elsewhere; vendors ("Google") only as a self-description's
  maker.
- Short model names (o1, o3, 4o) are matched as whole tokens, with no look-alike folding of
  their digits, so dates, ids and versions (2025-01-03, T-01, v1.40) come through.
"""

from __future__ import annotations

# Vendors, products and model families whose name, alone, points at one maker. Matched at a
# word's start and end (camelCase and snake_case count: ChatOpenAI, OPENAI_API_KEY).
NAMES: tuple[str, ...] = (
    "OpenAI",
    "ChatGPT",
    "GPT",
    "Anthropic",
    "DeepMind",
    "Mistral AI",
    "Mixtral",
    "Codestral",
    "Ministral",
    "Magistral",
    "Devstral",
    "Pixtral",
    "Qwen",
    "QwQ",
    "Tongyi",
    "Qianwen",
    "DashScope",
    "DeepSeek",
    "xAI",
    "Moonshot AI",
    "ChatGLM",
    "Zhipu",
    "ZhipuAI",
    "Baichuan",
    "ERNIE Bot",
    "Wenxin",
    "Hunyuan",
    "Doubao",
    "Nemotron",
    "Jamba",
    "AI21",
    "Vicuna",
    "HuggingChat",
    "Hugging Face",
    "Ollama",
    "vLLM",
    "OpenRouter",
    "Bing Chat",
    "Meta AI",
    "Gemini API",
    "Google AI Studio",
    "Vertex AI",
    "vertexai",
    "google-genai",
    "google.generativeai",
    "AWS Bedrock",
    "Amazon Bedrock",
    "Amazon Nova",
    "Amazon Titan",
    "IBM Granite",
    "Perplexity AI",
    "Perplexity Sonar",
    "Cohere For AI",
    "EXAONE",
    "GigaChat",
    "YandexGPT",
    "StepFun",
    "SenseNova",
    "SenseChat",
    "Yuanbao",
    "Pangu",
    "Tiangong",
    "Qianfan",
    "iFlytek Spark",
    "SparkDesk",
    "Nous Hermes",
    "OpenHermes",
    "Falcon LLM",
    "Meta Llama",
    "NovelAI",
    "Character.AI",
    "Inflection AI",
    "Mistral AI",
    "Microsoft Copilot",
    "GitHub Copilot",
    "Gemini Advanced",
    "Claude.ai",
    "Gemini Nano",
    # Transliterations, as Russian, Japanese, Korean and Chinese answers write them.
    "Клод",
    "Антропик",
    "ЧатГПТ",
    "Джемини",
    "Гемини",
    "Дипсик",
    "Квен",
    "Грок",
    "Мистраль",
    "クロード",
    "アンソロピック",
    "オープンAI",
    "オープンエーアイ",
    "チャットGPT",
    "ジェミニ",
    "ジェミナイ",
    "ディープシーク",
    "グロック",
    "ミストラル",
    "클로드",
    "앤트로픽",
    "앤스로픽",
    "오픈AI",
    "오픈에이아이",
    "챗GPT",
    "제미나이",
    "제미니",
    "딥시크",
    "كلود",
    "أنثروبيك",
    "جيميني",
    "克劳德",
    "通义千问",
    "通义",
    "千问",
    "文心一言",
    "文心",
    "智谱清言",
    "智谱",
    "月之暗面",
    "深度求索",
    "讯飞星火",
    "混元",
    "腾讯混元",
    "豆包",
    "元宝",
    "腾讯元宝",
    "盘古",
    "天工",
    "星火",
    "讯飞",
    "商汤",
    "日日新",
    "阶跃星辰",
    "百川",
    "智谱AI",
    "文心大模型",
    "通义灵码",
    "ジェミニ",
    "クロード",
    "ラマ",
    "라마",
    "Лама",
    "ГигаЧат",
    "ЯндексGPT",
    "Гигачат",
    "百川智能",
    "零一万物",
)

# Model names that are also ordinary words or people's names ("Dear Claude", "a llama", "the
# mistral wind", "Fit a Gamma GLM"): masked only in a model's context (a version or a size
# after them, an AI word or a self-description near them, a vendor beside them); anywhere else
# they are left as written and the output is held for an admin ("possible model name").
AMBIGUOUS: tuple[str, ...] = (
    "Claude",
    "Gemini",
    "Gemma",
    "PaLM",
    "Llama",
    "LLaMA",
    "Mistral",
    "Grok",
    "Kimi",
    "MiniMax",
    "GLM",
    "Phi",
    "Yi",
    "Nova",
    "Sonar",
    "Granite",
    "Command",
    "Aya",
    "Codex",
    "Falcon",
    "Orca",
    "Hermes",
    "Titan",
    "Zephyr",
    "Jamba",
    "Bard",
    "Copilot",
    "Cohere",
    "Perplexity",
    "Reka",
    "Inflection",
    "Groq",
    "Ernie",
)

# Of those, the model families whose name with a version is the model's ("Llama 3", "GLM-4"),
# where the others with a number are also products ("Nova 5" phones, "Titan 3" blenders) and
# need a size ("Granite 3.3 8B") or more context.
VERSIONED_AMBIGUOUS: tuple[str, ...] = (
    "Claude",
    "Gemini",
    "Gemma",
    "PaLM",
    "Llama",
    "LLaMA",
    "Mistral",
    "Grok",
    "Kimi",
    "MiniMax",
    "GLM",
    "Phi",
    "Yi",
    "Jamba",
    "Ernie",
    "Codex",
)

# Names matched only as written, their words side by side ("Command A", not "command - a").
NAMES_AS_WRITTEN: tuple[str, ...] = ("Command A", "Command R", "Command R+", "Command R7B")

# Names that are also ordinary words: masked only when capitalized as a name ("the arguments
# cohere" stays, "Cohere's model" does not).
CASED_NAMES: tuple[str, ...] = ("Cohere", "Bard", "Copilot", "Groq", "Reka", "Inflection")

# Hosts and API-key variables that name a vendor where its plain name does not already.
HOSTS_AND_KEYS: tuple[str, ...] = (
    "x.ai",
    "ai.google.dev",
    "aistudio.google.com",
    "generativelanguage.googleapis.com",
    "bigmodel.cn",
    "moonshot.cn",
    "moonshot.ai",
    "cohere.com",
    "cohere.ai",
    "mistral.ai",
    "deepmind.google",
    "perplexity.ai",
    "GOOGLE_API_KEY",
    "GOOGLE_GENAI_API_KEY",
    "VERTEXAI_API_KEY",
    "MOONSHOT_API_KEY",
    "CO_API_KEY",
    "PPLX_API_KEY",
    "TOGETHER_API_KEY",
    "FIREWORKS_API_KEY",
    "HF_TOKEN",
    # API keys' own prefixes
    "sk-ant-",
    "sk-proj-",
)

# Families: masked together with the versions, sizes and tiers written after them ("Claude
# 3.5 Sonnet", "gpt-oss-120b", "Llama 3.1 70B Instruct", "DeepSeek-V3", "Kimi K2"). The ones
# in FAMILIES_WITH_VERSION are ordinary words and count only with a version ("Phi-3", "Yi 34B").
FAMILIES: tuple[str, ...] = (
    "ChatGPT",
    "GPT",
    "Claude",
    "Gemini",
    "Gemma",
    "Llama",
    "Meta Llama",
    "CodeLlama",
    "Qwen",
    "QwQ",
    "Mistral",
    "Mixtral",
    "Codestral",
    "Ministral",
    "Magistral",
    "Devstral",
    "Pixtral",
    "DeepSeek",
    "Grok",
    "Kimi",
    "GLM",
    "ChatGLM",
    "ERNIE",
    "Hunyuan",
    "Doubao",
    "MiniMax",
    "Nemotron",
    "Jamba",
    "Baichuan",
    "InternLM",
    "OLMo",
    "PaLM",
)
FAMILIES_WITH_VERSION: tuple[str, ...] = (
    "Phi",
    "Yi",
    "DBRX",
    "StarCoder",
    "WizardLM",
    "Zephyr",
)

# Claude's tiers, which are ordinary words too: a model's name only with one of its versions
# ("Sonnet 3.5", "Opus 4.1"; not Shakespeare's "Sonnet 18"), after "Claude", or as the speaker's
# own name ("I'm Sonnet").
TIERS: tuple[str, ...] = ("Sonnet", "Opus", "Haiku")

# What may follow a family name as part of one model's name.
QUALIFIERS: tuple[str, ...] = (
    "opus",
    "sonnet",
    "haiku",
    "instant",
    "pro",
    "flash",
    "lite",
    "ultra",
    "nano",
    "mini",
    "turbo",
    "large",
    "medium",
    "small",
    "tiny",
    "coder",
    "code",
    "chat",
    "instruct",
    "preview",
    "thinking",
    "reasoner",
    "reasoning",
    "plus",
    "max",
    "oss",
    "heavy",
    "vision",
    "omni",
    "exp",
    "experimental",
    "latest",
    "air",
    "base",
    "high",
    "low",
)

# OpenAI's reasoning models and the "omni" shorthand: whole lowercase tokens only.
SHORT_MODELS: tuple[str, ...] = ("o1", "o3", "o4", "4o")
SHORT_QUALIFIERS: tuple[str, ...] = ("mini", "pro", "preview", "high", "low", "deep research")

# Vendors whose names are ordinary words or companies with other business: masked only as the
# maker in an assistant's self-description ("I was trained by Google").
VENDORS: tuple[str, ...] = (
    "Google",
    "Meta",
    "Microsoft",
    "Amazon",
    "AWS",
    "Apple",
    "IBM",
    "Nvidia",
    "Alibaba",
    "Baidu",
    "Tencent",
    "ByteDance",
    "Huawei",
    "Samsung",
    "iFlytek",
    "Moonshot",
    "Yandex",
    "Яндекс",
    "Sber",
    "Сбер",
    "LG",
    "LG AI Research",
    "Naver",
    "Kakao",
    "Xiaomi",
    "Meituan",
    "Cohere",
    "Perplexity",
    "01.AI",
    "谷歌",
    "百度",
    "阿里巴巴",
    "阿里云",
    "阿里",
    "腾讯",
    "字节跳动",
    "华为",
    "グーグル",
    "구글",
)
# Words that continue a vendor's name in a self-description ("Google DeepMind", "Mistral AI").
VENDOR_SUFFIXES: tuple[str, ...] = (
    "AI",
    "Labs",
    "Lab",
    "Research",
    "DeepMind",
    "Cloud",
    "Brain",
    "Inc",
    "LLC",
    "Ltd",
    "Technologies",
    "Team",
    "Corporation",
)

# Words a contender's name or model id may contain that mean nothing on their own: never
# masked alone ("acme/it" masks "acme/it", not every "it").
COMMON_WORDS: frozenset[str] = frozenset(
    """it is in on at of to a an the and or for with pro max mini base large small medium
    chat instruct turbo latest default test local model models baseline candidate assistant
    answer system server gateway proxy prod production staging internal main primary backup
    fast slow cheap best new old final draft api v1 v2 llm ai bot agent service app demo
    example sample preview stable beta alpha release version current next legacy""".split()
)
# Host labels that say nothing about who serves the model.
GENERIC_HOST_LABELS: frozenset[str] = frozenset(
    """api www inference example com net org io ai dev cloud local localhost internal models
    model llm gateway proxy prod staging eu us east west chat app apps service services svc
    cluster azure amazonaws aws googleapis""".split()
)
