"""Writes tests/reviews/blinding_corpus_generated.jsonl: leak and ordinary cases made from the
maintained model data (genai-prices), the self-description languages table and hand-written
sentences, by class. Deterministic; run it after changing either source, and commit its output:

    .venv/bin/python tests/reviews/blinding_corpus_gen.py

The sentences that carry a self-description are written here per language, independently of
the table's patterns (tasks/blinding/languages.py), so the test checks the patterns against
how each language says it, not against themselves. Which model ids count as names is decided
here by the words' frequency alone (wordfreq), not by the masking code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

OUT = Path(__file__).with_name("blinding_corpus_generated.jsonl")

# Per language: self-descriptions with {X} for the maker, and one ordinary sentence about
# something else a company made (it must come through as written).
SELF = {
    "en": (
        ["I am a large language model, trained by {X}.", "{X} trained me to answer questions.",
         "My developer is {X}.", "I'm an AI assistant built on {X}'s model."],
        "The bridge was built by {X} in 1932.",
    ),
    "es": (["Soy un asistente de IA desarrollado por {X}.", "{X} me entrenó para ayudarte.",
            "Mi desarrollador es {X}."], "El puente fue construido por {X} en 1932."),
    "de": (["Ich bin ein großes Sprachmodell, trainiert von {X}.",
            "Ich bin ein KI-Assistent, der von {X} entwickelt wurde.", "{X} hat mich entwickelt."],
           "Die Brücke wurde 1932 von {X} gebaut."),
    "fr": (["Je suis un modèle de langage entraîné par {X}.", "{X} m'a créé pour vous aider.",
            "Mon développeur est {X}."], "Le pont a été construit par {X} en 1932."),
    "pt": (["Sou um assistente de IA desenvolvido pela {X}.", "Meu criador é {X}."],
           "A ponte foi construída pela {X} em 1932."),
    "it": (["Sono un modello linguistico addestrato da {X}.", "{X} mi ha addestrato."],
           "Il ponte è stato costruito da {X} nel 1932."),
    "nl": (["Ik ben een AI-assistent, ontwikkeld door {X}.", "Ik ben door {X} getraind."],
           "De brug werd in 1932 door {X} gebouwd."),
    "pl": (["Jestem modelem językowym stworzonym przez {X}.",
            "Jestem asystentem AI opracowanym przez {X}."],
           "Most został zbudowany przez {X} w 1932 roku."),
    "ru": (["Я языковая модель, разработанная компанией {X}.", "Я был обучен {X}.",
            "{X} обучил меня."], "Мост был построен компанией {X} в 1932 году."),
    "uk": (["Я мовна модель, розроблена компанією {X}."], "Міст побудувала компанія {X} у 1932 році."),
    "bg": (["Аз съм езиков модел, разработен от {X}."], "Мостът е построен от {X} през 1932 г."),
    "sr": (["Ja sam AI asistent razvijen od strane {X}.", "Ја сам језички модел развијен од стране {X}."],
           "Most je izgradila kompanija {X} 1932. godine."),
    "hr": (["Ja sam AI asistent razvijen od strane tvrtke {X}."], "Most je 1932. izgradila tvrtka {X}."),
    "cs": (["Jsem jazykový model vyvinutý společností {X}."], "Most postavila společnost {X} v roce 1932."),
    "sk": (["Som jazykový model vyvinutý spoločnosťou {X}."], "Most postavila spoločnosť {X} v roku 1932."),
    "tr": (["Ben {X} tarafından geliştirilen bir yapay zeka modeliyim.", "{X} tarafından eğitildim."],
           "Köprü 1932'de {X} tarafından inşa edildi."),
    "fa": (["من یک مدل زبانی هستم که توسط {X} آموزش دیده است.", "{X} مرا آموزش داده است."],
           "این پل در سال ۱۹۳۲ به دست {X} ساخته شد."),
    "ar": (["أنا نموذج لغوي تم تطويري بواسطة {X}.", "أنا مساعد ذكاء اصطناعي من تطوير شركة {X}."],
           "افتتح الجسر عام 1932 وشيدته {X}."),
    "he": (["אני מודל שפה שפותח על ידי {X}."], "הגשר הוא של {X} ונפתח בשנת 1932."),
    "hi": (["मैं {X} द्वारा प्रशिक्षित एक बड़ा भाषा मॉडल हूँ।", "मुझे {X} ने बनाया है।"],
           "यह पुल 1932 में {X} द्वारा बनाया गया था।"),
    "bn": (["আমি {X} দ্বারা প্রশিক্ষিত একটি ভাষা মডেল।"], "সেতুটি ১৯৩২ সালে {X} দ্বারা তৈরি হয়েছিল।"),
    "th": (["ฉันเป็นโมเดลภาษาที่พัฒนาโดย {X}"], "สะพานนี้สร้างโดย {X} ในปี 1932"),
    "vi": (["Tôi là một mô hình ngôn ngữ được phát triển bởi {X}."],
           "Cây cầu được xây dựng bởi {X} vào năm 1932."),
    "id": (["Saya adalah model bahasa yang dikembangkan oleh {X}."],
           "Jembatan itu dibuat oleh {X} pada tahun 1932."),
    "ms": (["Saya ialah model bahasa yang dilatih oleh {X}."], "Jambatan itu dibina oleh {X} pada tahun 1932."),
    "sv": (["Jag är en AI-assistent utvecklad av {X}."], "Bron byggdes av {X} år 1932."),
    "da": (["Jeg er en sprogmodel udviklet af {X}."], "Broen blev bygget af {X} i 1932."),
    "no": (["Jeg er en språkmodell utviklet av {X}."], "Brua ble bygget av {X} i 1932."),
    "fi": (["Olen {X}:n kehittämä kielimalli."], "Sillan rakensi {X} vuonna 1932."),
    "hu": (["A {X} által fejlesztett nyelvi modell vagyok."], "A hidat 1932-ben a {X} építette."),
    "el": (["Είμαι ένα γλωσσικό μοντέλο που αναπτύχθηκε από την {X}."],
           "Η γέφυρα κατασκευάστηκε από την {X} το 1932."),
    "ro": (["Sunt un model de limbaj dezvoltat de {X}."], "Podul a fost construit de {X} în 1932."),
    "ca": (["Sóc un model de llenguatge entrenat per {X}."], "El pont va ser construït per {X} el 1932."),
    "zh": (["我是由{X}训练的大型语言模型。", "我的开发者是{X}。", "{X}训练了我。"], "这座桥由{X}公司建造。"),
    "ja": (["私は{X}によって開発されたAIアシスタントです。", "私の開発者は{X}です。"],
           "この橋は1932年に{X}が建設しました。"),
    "ko": (["저는 {X}에서 개발한 AI 어시스턴트입니다.", "제 개발자는 {X}입니다."],
           "이 다리는 1932년에 {X}가 건설했습니다."),
}  # fmt: skip
MAKERS = ["Google", "Amazon", "Microsoft", "Tencent", "Zentrix"]
LOCAL_MAKERS = {
    "zh": ["谷歌", "阿里巴巴"], "ja": ["グーグル"], "ko": ["구글"], "ar": ["جوجل"], "he": ["גוגל"],
    "hi": ["गूगल"], "fa": ["گوگل"], "ru": ["Яндекс"], "uk": ["Яндекс"], "th": ["กูเกิล"],
}  # fmt: skip
ORDINARY_MAKERS = ["Contoso", "Fabrikam"]

# Names that are also words or people's names, in ordinary sentences: byte for byte.
HOMONYMS = """Dear Claude, your order has shipped.
Claude Monet painted the water lilies at Giverny.
Brent oil prices rose 4% on Monday.
A llama is a South American camelid.
Llamas and alpacas are kept for their wool.
The mistral is a cold wind that blows through the Rhône valley.
Fit a Gamma GLM with a log link.
We fitted a GLM model to the claims data.
Gemini is the third sign of the zodiac.
The Gemini programme flew ten crewed missions.
Palm oil is used in many processed foods.
The palm trees along the beach were damaged in the storm.
Phi is the golden ratio, about 1.618.
The Greek letter phi often denotes an angle.
It took me a week to grok the new codebase.
A nova is a sudden brightening of a star.
The Chevrolet Nova was sold from 1962.
The ship used sonar to map the sea floor.
Granite countertops need sealing once a year.
The command line accepts a --verbose flag.
Use the command `ls -la` to list the files.
Yi Sun-sin is remembered as a naval commander.
Minimax is a decision rule for zero-sum games.
Aya is a common given name in Japan.
The orchid bloomed for the first time in March.
An ancient codex was found in the monastery library.
The peregrine falcon is the fastest bird.
An orca is the largest member of the dolphin family.
Hermes was the messenger of the Greek gods.
Titan is the largest moon of Saturn.
A zephyr is a gentle breeze from the west.
The jamba is a wooden box drum from Peru.
The bard sang of the old kings.
The copilot took over while the captain rested.
The arguments cohere once you read the appendix.
She stared at the form in perplexity.
Ernie and Bert live on Sesame Street.
Kimi Räikkönen won the 2007 Formula One title.
Gemma Arterton starred in the film.
Trinity College was founded in 1592.
The muse of epic poetry is Calliope.
Laguna Beach is a city in California.
Spark jobs run on the cluster every night.
Shakespeare's Sonnet 18 compares the beloved to a summer's day.
The opus was performed by the city orchestra.
Write a haiku about the autumn rain.
The Mistral Hotel is on the corner of the square.
Our manager Claude will call you tomorrow.
Please forward the invoice to Brent in accounting.
The granite quarry closed in 1980.
Falcon Heights is a city in Minnesota.
The Nova Scotia ferry leaves at noon.
Pilot error was ruled out by the inquiry.
Apple Pay and Google Pay are both accepted at checkout.
Sign in with your Google account to continue.
The Amazon rainforest spans nine countries.
Open the file in Microsoft Excel and save it as CSV.
Meta descriptions help search engines summarize a page.
Alibaba ships to most countries within two weeks.
The Samsung warranty covers the screen for one year.
IBM mainframes still run many banks' core systems.
Nvidia drivers must match the kernel version.""".splitlines()

# Ambiguous names in a model's context: masked.
IN_CONTEXT = [
    ("I'm {W}, an AI assistant.", "self-naming"), ("As an AI model, {W} cannot browse the web.", "ai-word"),
    ("{W} 3 answered the question in seconds.", "version"), ("Google's and Meta's {W} models differ.", "vendor"),
    ("This answer was generated by {W}.", "attribution"), ("Ich bin {W}, ein KI-Assistent.", "self-naming-de"),
    ("Soy {W}, un asistente de IA.", "self-naming-es"), ("我是{W}，一个人工智能助手。", "self-naming-zh"),
]  # fmt: skip
# ... and where nothing says they are a model's: left as written, the output held.
BARE = ["Ask {W} about the refund.", "Signed, {W}", "The reply from {W} was short."]
AMBIGUOUS = ["Claude", "Gemini", "Llama", "Mistral", "Grok", "Kimi", "MiniMax", "Gemma", "PaLM"]

# Chat-template tokens and provider ids: masked.
TOKENS = [
    "<|eot_id|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>", "<|start_header_id|>",
    "<|endoftext|>", "[INST]", "[/INST]", "<<SYS>>", "<｜end▁of▁sentence｜>", "<｜Assistant｜>",
    "<start_of_turn>", "<end_of_turn>", "<think>", "[TOOL_CALLS]", "chatcmpl-9xKf3LmQ2pRtZ8vW",
    "toolu_01A09q90qw90lq917835lq9", "fp_3bc1b5746c", "msg_01XFDUDYJgAACzvnptvVoYEL",
    "call_Gq2YtNk4bV0aXmL9sPz3rQwE",
]  # fmt: skip
TOKEN_SENTENCES = ["Sure, here it is {T}", "{T} The refund is on its way.", "Request id: {T}."]

# Short names written letter by letter, and look-alike first letters: held (or masked).
SPACED = ["Q w e n", "G L M", "K i m i", "G r o k", "Q.w.e.n", "G-L-M", "P h i", "Q W E N"]
LOOKALIKE_FIRST = {
    "K": ["Ꮶ", "ꓗ"], "D": ["ᗪ", "Ꭰ", "ꓓ"], "C": ["Ꮯ", "ᑕ", "ꓚ"], "G": ["Ꮐ", "ꓖ"],
    "M": ["Ꮇ", "ᗰ", "ꓟ"], "Q": ["ℚ"], "A": ["Ꭺ", "ᗩ", "ꓮ"], "O": ["Ꮎ", "ꓳ"],
}  # fmt: skip
LOOKALIKE_NAMES = ["Kimi", "DeepSeek", "Claude", "Gemini", "Mistral", "Qwen", "Anthropic", "OpenAI"]

# Names the project's own list adds to the data: masked.
PRODUCTS = [
    ("我用豆包写的。", "豆包"), ("这是腾讯元宝的回答。", "元宝"), ("盘古大模型给出的答案", "盘古"),
    ("天工AI生成", "天工"), ("腾讯混元：以下是答案", "混元"), ("Answer by Amazon Nova.", "amazonnova"),
    ("Generated with IBM Granite.", "ibmgranite"), ("Perplexity Sonar says yes.", "perplexitysonar"),
    ("Powered by Command A.", "commanda"), ("EXAONE wrote this.", "exaone"),
    ("GigaChat answered.", "gigachat"), ("StepFun step-2 model", "stepfun"),
    ("pip install google-genai", "googlegenai"), ("import vertexai", "vertexai"),
    ("See docs.cohere.com for details.", "cohere"), ("Codex 5 wrote the patch.", "codex"),
    ("Aya Expanse 32B translated it.", "aya"),
]  # fmt: skip

# Family names with whatever follows them: masked together (no "[redacted]-7" left).
SUFFIXED = [
    ("Claude-7 here.", ["claude"]), ("Llama Maverick answered.", ["llama", "maverick"]),
    ("Llama-4-Scout-17B-16E-Instruct", ["llama", "scout"]),
    ("claude-opus-4-1@20250805", ["claude", "opus"]), ("Gemini 2.5 Flash-Lite", ["gemini", "flash"]),
    ("Qwen3-Coder-480B-A35B", ["qwen", "coder"]), ("DeepSeek-V3.1-Terminus", ["deepseek", "terminus"]),
    ("Kimi K2 Thinking", ["kimi", "thinking"]), ("GLM-4.5-Air", ["glm", "air"]),
    ("Mistral Medium 3.1", ["mistral", "medium"]), ("Grok 4 Heavy", ["grok", "heavy"]),
]  # fmt: skip

# A contender of the corpus's campaign (test_blinding_corpus.GENERATED_CONTENDERS) in the
# spellings answers use.
CONTENDER = [
    ("I'm Orchid Pilot 7B.", "mask"), ("orchidpilot v2 here", "mask"), ("The orchid-pilot model says", "mask"),
    ("Orchid Pilot, at your service.", "mask"), ("OrchidLabs trained me.", "mask"),
    ("I am Orchid, an AI assistant.", "mask"), ("ORCHID-PILOT-7B-INSTRUCT", "mask"),
    ("orchid_pilot_7b", "mask"), ("Orchid here, happy to help.", "mask"),
    ("Signed, Orchid Pilot", "mask"), ("Ask Orchid-Pilot about it.", "mask"),
]  # fmt: skip

# Ordinary support answers (with the words that sit beside names): byte for byte.
SUPPORT = [
    "Your refund of $42.10 was issued to the card ending 4417 and reaches you in 3-5 days.",
    "Go to Settings > Account > Security and choose Reset password.",
    "Our assistant can track your parcel: reply with the order number, e.g. #48213.",
    "The model number is printed under the battery cover (for example, XR-200 Pro).",
    "You can pay with Apple Pay, Google Pay or a debit card.",
    "Version 2.4.1 of the app fixes the login loop on Android 14.",
    "The Pro plan includes 5 seats; the Max plan includes 20.",
    "Please restart the router, wait 30 seconds, and try again.",
    "Use the command `npm run build` before deploying.",
    "Our AI assistant is available 24/7 in the chat window.",
    "I have escalated your ticket to our billing team; they will reply within a day.",
    "The Large size is out of stock; the Medium ships tomorrow.",
    "Install the Microsoft Authenticator app and scan the QR code.",
    "Amazon Locker pick-up is available in most cities.",
    "I'm sorry for the delay: the courier lost the first parcel.",
    "The Nova 5 phone case fits models from 2021 onwards.",
    "Spark plugs should be replaced every 30,000 miles.",
    "The Titan 3 blender comes with a two-year warranty.",
]


# Phrasings written the way assistants introduce themselves, in several languages, each with
# the identities that must not be readable once masked.
PHRASINGS = [
    ("Hi! I'm Gemini, Google's AI model.", ["gemini", "google"]),
    ("As ChatGPT, I can't browse.", ["chatgpt"]),
    ("I was created by the folks at Anthropic.", ["anthropic"]),
    ("I'm a model developed by Mistral AI in Paris.", ["mistral"]),
    ("This response was produced by Llama 3.3 70B Instruct.", ["llama"]),
    ("I am Qwen, created by Alibaba Cloud.", ["qwen", "alibaba"]),
    ("Je suis Claude, un assistant IA créé par Anthropic.", ["claude", "anthropic"]),
    ("Ich bin Gemini, ein von Google entwickeltes KI-Modell.", ["gemini", "google"]),
    ("Sono Llama, un modello sviluppato da Meta.", ["llama"]),
    ("Soy Grok, creado por xAI.", ["grok", "xai"]),
    ("我是通义千问，由阿里云开发的大语言模型。", ["通义千问", "阿里云"]),
    (
        "私はGeminiです。Googleによってトレーニングされた大規模言語モデルです。",
        ["gemini", "google"],
    ),
    ("저는 Claude입니다. Anthropic이 만든 AI 어시스턴트입니다.", ["claude", "anthropic"]),
    ("Я — YandexGPT, нейросеть от Яндекса.", ["yandexgpt", "яндекс"]),
    ("Я GigaChat, разработанный Сбером.", ["gigachat", "сбер"]),
    ("Ben Claude, Anthropic tarafından geliştirildim.", ["claude", "anthropic"]),
    ("Eu sou o Gemini, um modelo de linguagem do Google.", ["gemini", "google"]),
    ("Jestem Claude, asystent AI stworzony przez Anthropic.", ["claude", "anthropic"]),
    ("Tôi là Gemini, một mô hình ngôn ngữ lớn do Google phát triển.", ["gemini", "google"]),
    ("Saya adalah Claude, asisten AI buatan Anthropic.", ["claude", "anthropic"]),
    ("أنا ChatGPT، نموذج لغوي من OpenAI.", ["chatgpt", "openai"]),
    ("मैं Gemini हूँ, Google का एक AI मॉडल।", ["gemini", "google"]),
    ("ฉันคือ Claude ผู้ช่วย AI จาก Anthropic", ["claude", "anthropic"]),
    ("Model: gpt-4.1-mini-2025-04-14", ["gpt41mini"]),
    ('model="claude-3-7-sonnet-latest"', ["claude", "sonnet"]),
    ("Using meta-llama/Llama-3.1-8B-Instruct via vLLM.", ["llama", "vllm"]),
    ("openrouter/auto picked mistralai/mistral-small-3.2-24b-instruct", ["mistral", "openrouter"]),
    ("As Phi-4-mini, I'll keep this short.", ["phi4"]),
    ("I'm Nova Pro, Amazon's model.", ["amazon"]),
    ("Powered by IBM Granite 3.3 8B Instruct.", ["granite"]),
    ("I am Sonar, Perplexity's search model.", ["sonar", "perplexity"]),
    ("I'm Command R+, built by Cohere.", ["cohere"]),
    ("I'm Aya Expanse, a multilingual model from Cohere For AI.", ["expanse", "cohere"]),
    ("I'm Kimi, developed by Moonshot AI.", ["kimi", "moonshot"]),
    ("Doubao (豆包) is ByteDance's assistant, and that's me.", ["doubao", "豆包", "bytedance"]),
    ("I'm Hunyuan-T1 from Tencent.", ["hunyuan", "tencent"]),
    ("I'm GLM-4.6, trained by Zhipu AI.", ["glm46", "zhipu"]),
    ("I'm MiniMax-M2, your assistant.", ["minimax"]),
    ("Claude Code suggested this patch.", ["claude"]),
    ("OpenAI's Codex CLI produced this diff.", ["openai", "codex"]),
    ("<|start_header_id|>assistant<|end_header_id|>", ["startheaderid", "endheaderid"]),
    ("<|channel|>final<|message|>Here is the answer.", ["channel", "message"]),
    ("My knowledge cutoff is 2024-06 as a GPT-4o model.", ["gpt4o"]),
    ("I'm a Google-trained language model.", ["google"]),
    ("I'm made by Google DeepMind.", ["google", "deepmind"]),
    ("This was written by an Anthropic model.", ["anthropic"]),
    ("My creators at OpenAI designed me to be helpful.", ["openai"]),
    ("I'm Llama 4 Maverick.", ["llama", "maverick"]),
    ("C\u200cl\u200ca\u200cu\u200cd\u200ce here.", ["claude"]),
    ("Ｃｌａｕｄｅ speaking.", ["claude"]),
    ("I'm ChatGPT (GPT-5 Thinking).", ["chatgpt", "gpt5"]),
    ("Grok 4 Fast here.", ["grok"]),
    ("Mistral Small 3.2 speaking.", ["mistral"]),
    ("from anthropic import Anthropic", ["anthropic"]),
    ('client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])', ["openai"]),
    ('{"model": "qwen-max", "temperature": 0.2}', ["qwen"]),
    ("See https://huggingface.co/meta-llama/Llama-3.1-8B for the weights.", ["llama"]),
    ("我是一个由深度求索公司开发的AI助手。", ["深度求索"]),
    ("我是字节跳动开发的豆包。", ["字节跳动", "豆包"]),
    ("私はAnthropic社が開発したClaudeです。", ["anthropic", "claude"]),
    ("저는 구글이 개발한 대규모 언어 모델입니다.", ["구글"]),
    ("Я ИИ-помощник, созданный компанией OpenAI.", ["openai"]),
    ("Είμαι ένα μοντέλο που εκπαιδεύτηκε από την OpenAI.", ["openai"]),
    ("אני Claude, עוזר בינה מלאכותית שפותח על ידי Anthropic.", ["claude", "anthropic"]),
    ("Mình là trợ lý AI do OpenAI phát triển.", ["openai"]),
    ("As a large language model from Mistral, I can't browse.", ["mistral"]),
    ("I'm powered by GPT-4 Turbo.", ["gpt4"]),
    ("Meta's Llama team trained me.", ["llama"]),
    ("Jag är en AI-assistent skapad av OpenAI.", ["openai"]),
    ("Built with Claude Sonnet 4.5 (thinking).", ["claude", "sonnet"]),
    ("— Generated by gpt-oss-120b", ["gptoss"]),
    ("Sonnet 4.5 here!", ["sonnet"]),
    ("Assistant (Claude 3 Haiku):", ["claude", "haiku"]),
    ("**Model:** Gemini 2.0 Flash-Lite", ["gemini", "flash"]),
    ("DeepSeek R1 reasoning trace follows", ["deepseek"]),
    ("<｜begin▁of▁sentence｜>Hello", ["beginofsentence"]),
    ("I'm Mixtral 8x22B.", ["mixtral"]),
    ("Qwen2.5-VL-72B-Instruct responded.", ["qwen"]),
]
# Ordinary sentences with the same words: never changed (a homonym may be held).
PROSE = [
    "Brent crude fell 2% as OPEC raised output.",
    "A llama can carry about 25% of its body weight.",
    "The mistral wind cleared the skies over Marseille.",
    "The palm oil shipment is delayed.",
    "Claude Debussy composed Clair de lune.",
    "We ran a minimax search to depth 6.",
    "Use the Granite 4 countertop cleaner weekly.",
    "The Falcon 9 booster landed safely.",
    "Our assistant Sonia will follow up by email.",
    "I'm sorry, I can't share your account password over chat.",
    "Please open the Google Drive link we sent you.",
    "Your Amazon order #112-4432 has been refunded.",
    "Microsoft Teams meetings can be recorded by the organizer.",
    "I recommend the Pro plan for teams of 5 or more.",
    "As an AI assistant, I can't process refunds directly; please contact billing.",
    "I was trained to follow your company's refund policy.",
    "Command-line tools are listed in the appendix.",
    "He bought a Mistral jacket at the outlet.",
    "Kimi and I met at the conference.",
    "Phi Beta Kappa is an honor society.",
    "The Yi language family is spoken in southwest China.",
    "The GLM results show a significant effect of age.",
    "This is recursive: the function calls itself.",
    "Use a type-safe wrapper and open chat with support.",
    "Scale down the cluster at night to save costs.",
    "Use the command `git log` to see the history.",
    "The Phoenix Suns won in overtime.",
    "Apache Spark jobs failed overnight.",
    "Add a meta description to every page.",
    "The Gemini constellation is visible in winter.",
    "The Falcon Heavy carried two boosters.",
    "Our claims team uses a Poisson GLM.",
    "Ask Alexa to set a timer.",
    "The llama farm offers tours on weekends.",
    "Set the temperature to 0.7 in the oven settings.",
    "The Nova Launcher theme is free.",
    "The Pi 5 board needs a 27 W power supply.",
    "Command Center shows all devices.",
    "We offer Pro, Plus and Max plans.",
    "Gemma and Claude are our support agents this week.",
]


def _model_names() -> list[tuple[str, str, str]]:
    """(display name, id as written, family) for a sample of the data's model ids whose
    family is no common word (by frequency)."""
    from genai_prices.data import providers
    from wordfreq import zipf_frequency

    seen, out = set(), []
    for provider in providers:
        for model in provider.models:
            model_id = model.id.split(":")[0].rsplit("/", 1)[-1]
            words = [w for w in re.split(r"[-_.]+", model_id) if w]
            head = re.match(r"[a-z]+", words[0].casefold()) if words else None
            if not head or len(head.group()) < 4:
                continue
            family = head.group()
            common = max(zipf_frequency(family, lang) for lang in ("en", "de", "fr", "es"))
            if common >= 1.5 or (family, len(words)) in seen:
                continue
            seen.add((family, len(words)))
            display = " ".join(w.capitalize() if w.isalpha() else w.upper() for w in words)
            out.append((display, model_id, family))
    return out


def cases() -> list[dict]:
    out: list[dict] = []

    def add(cls: str, expect: str, text: str, identities: list[str]) -> None:
        out.append(
            {"id": f"gen-{cls}-{len(out):04d}", "class": cls, "expect": expect, "text": text,
             "identities": identities}
        )  # fmt: skip

    def letters(word: str) -> str:
        return "".join(c for c in word.casefold() if c.isalnum())

    for code, (examples, ordinary) in SELF.items():
        for example in examples:
            for maker in [*MAKERS, *LOCAL_MAKERS.get(code, [])]:
                add(f"self-{code}", "mask", example.format(X=maker), [letters(maker)])
        for maker in ORDINARY_MAKERS:
            add(f"ordinary-{code}", "keep", ordinary.format(X=maker), [])
    sentences = ["I'm {N}.", "Answer generated by {N} for your ticket.", "Model: `{I}`",
                 "Switching to {N} gave better results."]  # fmt: skip
    for i, (display, model_id, family) in enumerate(_model_names()):
        text = sentences[i % len(sentences)].format(N=display, I=model_id)
        add("data-model", "mask", text, [family])
    for word in AMBIGUOUS:
        for sentence, kind in IN_CONTEXT:
            if kind.endswith("-zh") and len(word) < 5:
                continue  # the corpus check reads short names only as words: "我是Grok" is one
            add(f"in-context-{kind}", "mask", sentence.format(W=word), [letters(word)])
    for word in AMBIGUOUS:
        for sentence in BARE:
            add("bare-ambiguous", "hold", sentence.format(W=word), [letters(word)])
    for token in TOKENS:
        for sentence in TOKEN_SENTENCES:
            add("template-token", "mask", sentence.format(T=token), [letters(token)])
    for spaced in SPACED:
        add("spaced-short", "hold", f"Hi, {spaced} here. How can I help?", [letters(spaced)])
    for name in LOOKALIKE_NAMES:
        for lookalike in LOOKALIKE_FIRST.get(name[0], []):
            add(
                "lookalike-script",
                "hold",
                f"{lookalike}{name[1:]} wrote this answer.",
                [letters(name)],
            )
    for text, identity in PRODUCTS:
        add("products", "mask", text, [identity])
    for text, identities in SUFFIXED:
        add("suffixed", "mask", text, identities)
    for text, expect in CONTENDER:
        add("contender", expect, text, ["orchid"])
    for text in HOMONYMS:
        add("homonym", "homonym", text, [])
    for text, identities in PHRASINGS:
        add("phrasings", "mask", text, identities)
    for text in PROSE:
        add("prose", "homonym", text, [])
    for text in SUPPORT:
        add("support", "keep", text, [])
    return out


def main() -> None:
    rows = cases()
    OUT.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in rows), "utf-8")
    print(f"{len(rows)} cases -> {OUT}")


if __name__ == "__main__":
    main()
