"""Self-descriptions in the languages most used on the web: one row per language.

Each row gives the language's words for the assistant speaking of itself (`me`: "I am", "I";
`ai`: "AI", "model", "assistant") and templates of the ways it names its maker, in the
language's own word order, with `{X}` where the maker stands:

- a participle and the agent ("developed by X", "desarrollado por X", "von X trainiert",
  "X tarafından geliştirilen", "X द्वारा विकसित", "由X训练");
- the maker as the subject ("X trained me", "X hat mich entwickelt");
- the maker as a possession ("my developer is X", "built on X's model").

A template marked `self` names the speaker itself ("me", "my developer") and counts
wherever it stands; the others count only in a sentence with the language's (or English)
`me` or `ai` words, so "the bridge was built by Contoso" stays. The templates are read on
the text's view (tasks/blinding/skeleton.py), where look-alike letters are folded: they are folded the
same way when compiled. tests/reviews/blinding_corpus_gen.py builds leak cases from this
table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    code: str
    name: str
    me: tuple[str, ...]
    ai: tuple[str, ...]
    # (template, names the speaker itself)
    templates: tuple[tuple[str, bool], ...]
    # does the script separate words with spaces (the maker is then a whole word)
    spaced: bool = True


LANGUAGES: tuple[Language, ...] = (
    Language(
        "en",
        "English",
        ("I am", "I'm", "I was", "I've been", "I have been", "my", "me"),
        ("AI", "assistant", "language model", "LLM", "chatbot", "model"),
        (
            (
                r"(?:developed|created|made|trained|built|designed|engineered|released"
                r"|fine-?tuned|programmed|produced|powered|owned|provided)\s+by\s+{X}",
                False,
            ),
            (r"{X}\s+(?:trained|developed|created|made|built|designed|programmed)\s+me\b", True),
            (
                r"\bmy\s+(?:developer|creator|maker|provider|vendor|parent company|author)s?"
                r"\s+(?:is|are|was)\s+{X}",
                True,
            ),
            (
                r"\b(?:built|based|running|trained)\s+on\s+(?:a\s+|an\s+|the\s+)?{X}(?:['’]s)?"
                r"\s+(?:model|models|LLM|technology|foundation model)",
                False,
            ),
            (r"\bI\s+(?:come|came)\s+from\s+{X}", True),
            (
                r"{X}['’]s\s+(?:own\s+)?(?:AI\s+|language\s+|large\s+language\s+)?"
                r"(?:model|assistant|chatbot|LLM)\b",
                False,
            ),
        ),
    ),
    Language(
        "es",
        "Spanish",
        ("soy", "yo", "me", "mi"),
        ("IA", "modelo", "asistente", "inteligencia artificial"),
        (
            (
                r"(?:desarrollad|cread|entrenad|hech|construid|diseñad|programad)[oa]s?\s+por\s+{X}",
                False,
            ),
            (r"{X}\s+me\s+(?:entrenó|desarrolló|creó|hizo|construyó)", True),
            (r"\bmi\s+(?:desarrollador|creador|fabricante)\s+es\s+{X}", True),
            (r"\b(?:modelo|asistente)(?:\s+de\s+(?:lenguaje|IA))?\s+de\s+{X}", False),
            (r"\bbasad[oa]\s+en\s+(?:un\s+|el\s+)?modelo\s+de\s+{X}", False),
        ),
    ),
    Language(
        "de",
        "German",
        ("ich bin", "ich", "mich", "mein"),
        ("KI", "Modell", "Sprachmodell", "Assistent"),
        (
            (
                r"(?:entwickelt|trainiert|erstellt|erschaffen|gebaut|programmiert|geschaffen"
                r"|hergestellt)\s+von\s+{X}",
                False,
            ),
            (
                r"\bvon\s+{X}\s+(?:entwickelt|trainiert|erstellt|erschaffen|gebaut|programmiert"
                r"|geschaffen)",
                False,
            ),
            (r"{X}\s+hat\s+mich\s+(?:entwickelt|trainiert|erstellt|erschaffen|gebaut)", True),
            (r"\bmein\s+(?:Entwickler|Hersteller|Schöpfer|Anbieter)\s+ist\s+{X}", True),
            (r"\bbasiere\s+auf\s+(?:einem\s+)?(?:Modell|Sprachmodell)\s+von\s+{X}", True),
        ),
    ),
    Language(
        "fr",
        "French",
        ("je suis", "je", "moi", "mon"),
        ("IA", "modèle", "assistant", "intelligence artificielle"),
        (
            (
                r"(?:développé|entraîné|créé|conçu|formé|construit|fabriqué|programmé)e?s?\s+par\s+{X}",
                False,
            ),
            (r"{X}\s+m['’]a\s+(?:créé|entraîné|développé|conçu|formé)e?", True),
            (r"\bmon\s+(?:développeur|créateur|concepteur)\s+est\s+{X}", True),
            (r"\bbasée?\s+sur\s+(?:un\s+|le\s+)?modèle\s+d['e]\s*{X}", False),
        ),
    ),
    Language(
        "pt",
        "Portuguese",
        ("sou", "eu", "me", "meu"),
        ("IA", "modelo", "assistente", "inteligência artificial"),
        (
            (
                r"(?:desenvolvid|criad|treinad|feit|construíd|projetad)[oa]s?\s+(?:pela|pelo|por)\s+{X}",
                False,
            ),
            (r"{X}\s+me\s+(?:treinou|desenvolveu|criou|fez)", True),
            (r"\bmeu\s+(?:desenvolvedor|criador)\s+é\s+(?:a\s+|o\s+)?{X}", True),
            (r"\b(?:modelo|assistente)(?:\s+de\s+(?:linguagem|IA))?\s+(?:da|do|de)\s+{X}", False),
        ),
    ),
    Language(
        "it",
        "Italian",
        ("sono", "io", "mi", "mio"),
        ("IA", "modello", "assistente", "intelligenza artificiale"),
        (
            (r"(?:sviluppat|addestrat|creat|realizzat|costruit|progettat)[oaie]\s+da\s+{X}", False),
            (r"{X}\s+mi\s+ha\s+(?:addestrato|sviluppato|creato)", True),
            (r"\bil\s+mio\s+(?:sviluppatore|creatore)\s+è\s+{X}", True),
        ),
    ),
    Language(
        "nl",
        "Dutch",
        ("ik ben", "ik", "mij", "mijn"),
        ("AI", "model", "taalmodel", "assistent"),
        (
            (r"(?:ontwikkeld|getraind|gemaakt|gebouwd|ontworpen)\s+door\s+{X}", False),
            (r"\bdoor\s+{X}\s+(?:ontwikkeld|getraind|gemaakt|gebouwd|ontworpen)", False),
            (r"\bmijn\s+(?:ontwikkelaar|maker)\s+is\s+{X}", True),
        ),
    ),
    Language(
        "pl",
        "Polish",
        ("jestem", "ja", "mnie", "mój"),
        ("AI", "SI", "model", "asystent", "sztuczna inteligencja"),
        (
            (
                r"(?:opracowan|stworzon|wytrenowan|wyszkolon|zbudowan|zaprojektowan)\w*\s+przez\s+{X}",
                False,
            ),
            (r"{X}\s+(?:mnie\s+)?(?:stworzył|wytrenował|opracował)[ao]?(?:\s+mnie)?", True),
            (r"\bmoim\s+(?:twórcą|producentem)\s+jest\s+{X}", True),
        ),
    ),
    Language(
        "ru",
        "Russian",
        ("я", "меня", "мой"),
        ("ИИ", "модель", "ассистент", "помощник", "нейросеть"),
        (
            (r"(?:разработ|обуч|создан|сделан|натренирован)\w*\s+(?:компанией\s+|в\s+)?{X}", False),
            (r"{X}\s+(?:обучил|создал|разработал)[аи]?\s+меня", True),
            (r"\bмой\s+(?:разработчик|создатель)\s+\W?\s*{X}", True),
            (r"(?:нейросеть|модель|ассистент|помощник)\w*\s+от\s+(?:компании\s+)?{X}", False),
        ),
    ),
    Language(
        "uk",
        "Ukrainian",
        ("я", "мене", "мій"),
        ("ШІ", "модель", "асистент", "помічник"),
        (
            (r"(?:розроблен|навчен|створен|натренован)\w*\s+(?:компанією\s+)?{X}", False),
            (r"{X}\s+(?:навчив|створив|розробив)[ла]?\s+мене", True),
        ),
    ),
    Language(
        "bg",
        "Bulgarian",
        ("аз съм", "аз", "мен"),
        ("ИИ", "модел", "асистент"),
        ((r"(?:разработен|обучен|създаден|направен)\w*\s+от\s+(?:компанията\s+)?{X}", False),),
    ),
    Language(
        "sr",
        "Serbian",
        ("ja sam", "ја сам", "ja", "ја"),
        ("AI", "model", "модел", "asistent", "асистент"),
        (
            (
                r"(?:razvijen|obučen|kreiran|napravljen|развијен|обучен|креиран)\w*\s+(?:od\s+strane\s+|од\s+стране\s+|od\s+|од\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "hr",
        "Croatian",
        ("ja sam", "ja"),
        ("AI", "model", "asistent", "umjetna inteligencija"),
        (
            (
                r"(?:razvijen|treniran|stvoren|izrađen|obučen)\w*\s+(?:od\s+strane\s+|od\s+)(?:tvrtke\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "cs",
        "Czech",
        ("jsem", "já", "mě"),
        ("AI", "model", "asistent", "umělá inteligence"),
        (
            (
                r"(?:vyvinut|vytvořen|natrénován|trénován|vyškolen)\w*\s+(?:společností\s+|firmou\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "sk",
        "Slovak",
        ("som", "ja"),
        ("AI", "model", "asistent", "umelá inteligencia"),
        (
            (
                r"(?:vyvinut|vytvoren|trénovan|natrénovan)\w*\s+(?:spoločnosťou\s+|firmou\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "tr",
        "Turkish",
        ("ben", "benim", "beni"),
        ("yapay zeka", "model", "asistan", "dil modeli"),
        (
            (
                r"{X}(?:['’]\w+)?\s+tarafından\s+(?:geliştiril|eğitil|oluşturul|yapıl|tasarlan)\w*",
                False,
            ),
            (r"\bbenim\s+(?:geliştiricim|yaratıcım)\s+{X}", True),
            # the verb's first-person ending says who: "Google tarafından eğitildim"
            (
                r"{X}(?:['’]\w+)?\s+tarafından\s+(?:geliştiril|eğitil|oluşturul|yapıl|tasarlan)"
                r"d[iı]m\b",
                True,
            ),
        ),
    ),
    Language(
        "fa",
        "Persian",
        ("من", "مرا"),
        ("هوش مصنوعی", "مدل", "دستیار"),
        (
            (r"توسط\s+{X}\s+(?:توسعه|آموزش|ساخته|ایجاد|طراحی)", False),
            (r"{X}\s+(?:مرا|من\s+را)\s+(?:آموزش|ساخت|توسعه)", True),
        ),
        spaced=True,
    ),
    Language(
        "ar",
        "Arabic",
        ("أنا", "انا"),
        ("ذكاء اصطناعي", "الذكاء الاصطناعي", "نموذج", "مساعد"),
        (
            (
                r"(?:من\s+قبل|بواسطة|من\s+تطوير|من\s+إنشاء|من\s+تدريب|طورتني|دربتني|أنشأتني)\s+(?:شركة\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "he",
        "Hebrew",
        ("אני",),
        ("בינה מלאכותית", "מודל", "עוזר"),
        ((r"(?:על\s+ידי|ע\"י|בידי)\s+(?:חברת\s+)?{X}", False),),
    ),
    Language(
        "hi",
        "Hindi",
        ("मुझे", "मेरा", "मैंने"),
        ("एआई", "AI", "मॉडल", "सहायक", "कृत्रिम बुद्धिमत्ता"),
        (
            (r"{X}\s+(?:द्वारा|ने)\s+(?:विकसित|प्रशिक्षित|बनाया|बनाई|निर्मित|तैयार)", False),
            (r"\bमेरे\s+(?:डेवलपर|निर्माता)\s+{X}", True),
            (r"{X}\s+(?:का|की|के)\s+(?:एक\s+)?(?:AI\s+|एआई\s+)?(?:मॉडल|सहायक)", False),
        ),
    ),
    Language(
        "bn",
        "Bengali",
        ("আমি", "আমাকে"),
        ("এআই", "AI", "মডেল", "সহকারী"),
        ((r"{X}\s*(?:দ্বারা|এর\s+দ্বারা|এর)\s+(?:তৈরি|প্রশিক্ষিত|বিকশিত|উন্নত)", False),),
    ),
    Language(
        "th",
        "Thai",
        ("ฉัน", "ผม", "ดิฉัน"),
        ("AI", "โมเดล", "ผู้ช่วย", "ปัญญาประดิษฐ์"),
        ((r"(?:พัฒนา|ฝึก|สร้าง|ฝึกฝน|ออกแบบ)(?:ขึ้น)?โดย\s*(?:บริษัท\s*)?{X}", False),),
        spaced=False,
    ),
    Language(
        "vi",
        "Vietnamese",
        ("tôi", "mình"),
        ("AI", "mô hình", "trợ lý", "trí tuệ nhân tạo"),
        (
            (
                r"(?:phát\s+triển|huấn\s+luyện|đào\s+tạo|tạo\s+ra|xây\s+dựng)\s+(?:bởi|bới)\s+{X}",
                False,
            ),
            (r"\bnhà\s+phát\s+triển\s+của\s+tôi\s+là\s+{X}", True),
            (
                r"\bdo\s+{X}\s+(?:phát\s+triển|huấn\s+luyện|đào\s+tạo|tạo\s+ra|xây\s+dựng)",
                False,
            ),
        ),
    ),
    Language(
        "id",
        "Indonesian",
        ("saya", "aku"),
        ("AI", "model", "asisten", "kecerdasan buatan"),
        ((r"(?:dikembangkan|dilatih|dibuat|diciptakan|dirancang)\s+oleh\s+{X}", False),),
    ),
    Language(
        "ms",
        "Malay",
        ("saya",),
        ("AI", "model", "pembantu", "kecerdasan buatan"),
        ((r"(?:dibangunkan|dilatih|dicipta|dibina|direka)\s+oleh\s+{X}", False),),
    ),
    Language(
        "sv",
        "Swedish",
        ("jag är", "jag", "mig"),
        ("AI", "modell", "språkmodell", "assistent"),
        ((r"(?:utvecklad|tränad|skapad|byggd|gjord)e?\s+av\s+{X}", False),),
    ),
    Language(
        "da",
        "Danish",
        ("jeg er", "jeg", "mig"),
        ("AI", "model", "sprogmodel", "assistent"),
        ((r"(?:udviklet|trænet|skabt|lavet|bygget)\s+af\s+{X}", False),),
    ),
    Language(
        "no",
        "Norwegian",
        ("jeg er", "jeg", "meg"),
        ("AI", "KI", "modell", "språkmodell", "assistent"),
        ((r"(?:utviklet|trent|laget|skapt|bygget)\s+av\s+{X}", False),),
    ),
    Language(
        "fi",
        "Finnish",
        ("olen", "minä", "minut"),
        ("tekoäly", "malli", "kielimalli", "avustaja"),
        ((r"{X}:?n\s+(?:kehittämä|kouluttama|luoma|tekemä|rakentama)", False),),
    ),
    Language(
        "hu",
        "Hungarian",
        ("vagyok", "én", "engem"),
        ("MI", "AI", "modell", "asszisztens", "mesterséges intelligencia"),
        ((r"{X}\s+által\s+(?:fejlesztett|képzett|létrehozott|készített|tanított)", False),),
    ),
    Language(
        "el",
        "Greek",
        ("είμαι", "εγώ", "με"),
        ("ΤΝ", "μοντέλο", "βοηθός", "τεχνητή νοημοσύνη"),
        (
            (
                r"(?:αναπτύχθηκα|εκπαιδεύτηκα|δημιουργήθηκα|αναπτύχθηκε|εκπαιδευμένο|αναπτυγμένο"
                r"|δημιουργημένο|εκπαιδευμένος|αναπτυγμένος)\s+από\s+(?:την\s+|τη\s+|το\s+|τον\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "ro",
        "Romanian",
        ("sunt", "eu", "mă"),
        ("IA", "AI", "model", "asistent", "inteligență artificială"),
        (
            (
                r"(?:dezvoltat|antrenat|creat|construit|proiectat)[ăa]?\s+de\s+(?:către\s+)?{X}",
                False,
            ),
        ),
    ),
    Language(
        "ca",
        "Catalan",
        ("sóc", "jo"),
        ("IA", "model", "assistent", "intel·ligència artificial"),
        ((r"(?:desenvolupat|entrenat|creat|fet|dissenyat)(?:s|da|des)?\s+per\s+{X}", False),),
    ),
    Language(
        "zh",
        "Chinese",
        ("我",),
        ("人工智能", "人工智慧", "模型", "助手", "AI", "大模型"),
        (
            (
                r"由\s*{X}\s*(?:公司|团队|集团|團隊)?\s*(?:开发|训练|研发|打造|创建|构建|推出|设计|發布|发布"
                r"|開發|訓練|研發)",
                False,
            ),
            (r"我的(?:开发者|開發者|创造者|创建者)是\s*{X}", True),
            (r"{X}\s*(?:公司)?\s*(?:训练|开发|打造|创造|訓練|開發)了我", True),
            (r"基于\s*{X}\s*的(?:模型|大模型|技术|語言模型|语言模型)", False),
        ),
        spaced=False,
    ),
    Language(
        "ja",
        "Japanese",
        ("私", "わたし", "僕"),
        ("AI", "モデル", "アシスタント", "言語モデル"),
        (
            (
                r"{X}\s*(?:社)?\s*(?:によって|により|が)\s*(?:開発|訓練|トレーニング|作成|構築|作られ|学習)",
                False,
            ),
            (r"私の開発者は\s*{X}", True),
        ),
        spaced=False,
    ),
    Language(
        "ko",
        "Korean",
        ("저는", "나는", "저를"),
        ("AI", "모델", "어시스턴트", "인공지능"),
        (
            (r"{X}\s*(?:에서|이|가|에\s*의해서?)\s*(?:개발|훈련|학습|만든|만들|제작)", False),
            (r"제\s*개발자는\s*{X}", True),
        ),
        spaced=False,
    ),
)
