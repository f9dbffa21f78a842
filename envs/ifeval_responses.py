"""A response built to follow a prompt's IFEval instructions: the oracle of ``instructions-v0``.

IFEval publishes prompts, not answers. ``check_env`` and the audit need a completion that must
pass each task, and the agreement bench needs responses to score, so :func:`compose` writes one:
plain filler sentences (in the language an instruction asks for, from :data:`LANGUAGE_TEXT`)
sized, laid out and decorated for every listed instruction, tried over a few sizes until our
strict checks all pass. It is a form-following text with no content; no model wrote it. A
prompt whose instructions contradict each other gets ``None``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlvr_gym.verifiers.ifeval import ifeval_kwargs
from rlvr_gym.verifiers.instructions import check

WORDS = (
    "garden", "river", "morning", "quiet", "bright", "stone", "path", "window", "summer", "light",
    "market", "friend", "valley", "cloud", "story", "paper", "music", "forest", "simple", "warm",
    "little", "open", "road", "town", "field", "song", "walk", "green", "blue", "old", "new", "calm",
    "hill", "lake", "wind", "sun", "moon", "tree", "bird", "fish", "book", "door", "wall", "cup",
    "tea", "bread", "milk", "soft", "slow", "fast", "high", "low", "long", "short", "kind", "glad",
    "busy", "dry", "wet", "cold", "hot", "fun", "dusk", "dawn", "sky", "fog", "rain", "snow",
    "glow", "hum", "drum", "lamp", "box", "jam", "fig", "plum", "nut", "bun", "sand", "shell",
    "coast", "harbor", "bridge", "tower", "lantern", "meadow", "orchard", "pebble", "ribbon",
    "candle", "basket", "pocket", "ticket", "button", "mirror", "pillow", "blanket", "kettle",
    "yard", "myth", "rhythm", "hymn", "gym", "lynx", "crypt", "nymph", "sync", "dry",
)  # fmt: skip
"""Filler vocabulary: common words, a few without vowels other than ``y`` for letter limits."""

ENGLISH = (
    "The morning was quiet and the garden path was wet after the rain.",
    "We walked along the river to the old stone bridge near the market.",
    "A friend brought warm bread and a pot of tea for everyone.",
    "Children played in the field until the sun went down behind the hills.",
    "The town library opens early on weekdays and closes late on Fridays.",
    "Our neighbor grows tomatoes and beans in a small green yard.",
    "Most people enjoy a long walk when the weather is mild.",
    "The baker sells fresh rolls every day before noon.",
)
"""Plain English sentences: the body where a case or language check reads the text."""

LANGUAGE_TEXT: dict[str, str] = {
    "en": "The morning was quiet and the garden path was wet after the rain.",
    "ar": "كان الصباح هادئا وكانت الحديقة مبللة بعد المطر. ذهب الأطفال إلى المدرسة في الصباح الباكر.",
    "bg": "Сутринта беше тиха и градината беше мокра след дъжда. Децата отидоха на училище рано сутринта.",
    "bn": "সকালটা শান্ত ছিল এবং বৃষ্টির পরে বাগানটা ভেজা ছিল। শিশুরা খুব সকালে স্কুলে গেল।",
    "de": "Der Morgen war ruhig und der Garten war nach dem Regen nass. Die Kinder gingen früh zur Schule.",
    "fa": "صبح آرام بود و باغ پس از باران خیس بود. بچه‌ها صبح زود به مدرسه رفتند.",
    "fi": "Aamu oli hiljainen ja puutarha oli märkä sateen jälkeen. Lapset menivät aikaisin kouluun.",
    "gu": "સવાર શાંત હતી અને વરસાદ પછી બગીચો ભીનો હતો. બાળકો વહેલી સવારે શાળાએ ગયા.",
    "hi": "सुबह शांत थी और बारिश के बाद बगीचा गीला था। बच्चे सुबह जल्दी स्कूल गए और उन्होंने बहुत कुछ सीखा।",
    "it": "La mattina era tranquilla e il giardino era bagnato dopo la pioggia. I bambini sono andati a scuola presto.",
    "kn": "ಬೆಳಿಗ್ಗೆ ಶಾಂತವಾಗಿತ್ತು ಮತ್ತು ಮಳೆಯ ನಂತರ ತೋಟ ಒದ್ದೆಯಾಗಿತ್ತು. ಮಕ್ಕಳು ಬೇಗನೆ ಶಾಲೆಗೆ ಹೋದರು.",
    "ko": "아침은 조용했고 비가 온 뒤 정원은 젖어 있었다. 아이들은 아침 일찍 학교에 갔다.",
    "mr": "सकाळ शांत होती आणि पावसानंतर बाग ओली झाली होती. मुले सकाळी लवकर शाळेत गेली आणि त्यांनी खूप काही शिकले.",
    "ne": "बिहान शान्त थियो र पानी परेपछि बगैंचा भिजेको थियो। केटाकेटीहरू बिहान सबेरै विद्यालय गए।",
    "pa": "ਸਵੇਰ ਸ਼ਾਂਤ ਸੀ ਅਤੇ ਮੀਂਹ ਤੋਂ ਬਾਅਦ ਬਾਗ਼ ਗਿੱਲਾ ਸੀ। ਬੱਚੇ ਸਵੇਰੇ ਜਲਦੀ ਸਕੂਲ ਗਏ।",
    "pt": "A manhã estava tranquila e o jardim estava molhado depois da chuva. As crianças foram cedo para a escola.",
    "ru": "Утро было тихим, и сад был мокрым после дождя. Дети рано утром пошли в школу.",
    "sw": "Asubuhi ilikuwa tulivu na bustani ilikuwa imelowa baada ya mvua. Watoto walikwenda shuleni mapema asubuhi.",
    "ta": "காலை அமைதியாக இருந்தது மழைக்குப் பிறகு தோட்டம் ஈரமாக இருந்தது. குழந்தைகள் அதிகாலையில் பள்ளிக்குச் சென்றனர்.",
    "te": "ఉదయం ప్రశాంతంగా ఉంది మరియు వర్షం తర్వాత తోట తడిగా ఉంది. పిల్లలు ఉదయాన్నే బడికి వెళ్లారు.",
    "th": "ตอนเช้าเงียบสงบและสวนเปียกหลังฝนตก เด็กๆ ไปโรงเรียนแต่เช้า",
    "ur": "صبح پرسکون تھی اور بارش کے بعد باغ گیلا تھا۔ بچے صبح سویرے اسکول گئے۔",
    "vi": "Buổi sáng yên tĩnh và khu vườn ướt sau cơn mưa. Bọn trẻ đi học từ sáng sớm.",
}
"""A short text per language IFEval asks for (written here; langdetect reads each as its code)."""


def _instructions(items: Sequence[Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    return [(str(i["id"]), ifeval_kwargs(i.get("kwargs"))) for i in items]


def _bounds(kws: list[tuple[str, Mapping[str, Any]]], family: str, key: str) -> tuple[int, int]:
    """``[low, high)`` from "at least"/"less than" instructions of ``family``."""
    low, high = 0, 10**6
    for name, kw in kws:
        if name == family:
            if kw.get("relation") == "at least":
                low = max(low, int(kw[key]))
            else:
                high = min(high, int(kw[key]))
    return low, high


def _vocabulary(kws: list[tuple[str, Mapping[str, Any]]], words: Sequence[str] = WORDS) -> list[str]:
    """``words`` that cannot trip a forbidden word, a capped keyword or a capped letter."""
    avoid: list[str] = []
    letters = ""
    for name, kw in kws:
        if name == "keywords:forbidden_words":
            avoid += [w.lower() for w in kw.get("forbidden_words") or []]
        elif name == "keywords:frequency" and kw.get("relation") == "less than":
            avoid.append(str(kw["keyword"]).lower())
        elif name == "keywords:letter_frequency" and kw.get("let_relation") == "less than":
            letters += str(kw["letter"]).lower()
    return [w for w in words if not any(a in w.lower() for a in avoid) and not set(w.lower()) & set(letters)]


def _sentences(count: int, length: int, vocabulary: list[str], language: str | None) -> list[str]:
    if language and language != "en":
        unit = LANGUAGE_TEXT[language]
        return [unit] * count
    if length == 0:  # natural English, for the case and language checks
        return [ENGLISH[n % len(ENGLISH)] for n in range(count)]
    cycle = itertools.cycle(vocabulary)
    out = []
    for _ in range(count):
        words = [next(cycle) for _ in range(max(length, 1))]
        out.append(" ".join(words).capitalize() + ".")
    return out


def _groups(items: list[str], count: int) -> list[str]:
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for n in range(count):
        end = start + size + (n < extra)
        out.append(" ".join(items[start:end]))
        start = end
    return out


def _build(
    kws: list[tuple[str, Mapping[str, Any]]], prompt: str, sentences: list[str], vocabulary: list[str]
) -> str:
    kw: dict[str, Mapping[str, Any]] = {}
    for name, value in kws:
        kw.setdefault(name, value)
    extra: list[str] = []
    for name, value in kws:
        if name == "keywords:existence":
            extra.append("Words: " + " ".join(value["keywords"]) + ".")
        elif name == "keywords:frequency" and value["relation"] == "at least":
            extra.append(" ".join([str(value["keyword"])] * int(value["frequency"])) + ".")
        elif name == "keywords:letter_frequency" and value["let_relation"] == "at least":
            extra.append(str(value["letter"]) * int(value["let_frequency"]) + ".")
        elif name == "change_case:capital_word_frequency" and value["capital_relation"] == "at least":
            extra.append(" ".join(["NOTE"] * int(value["capital_frequency"])) + ".")
    if "detectable_content:number_placeholders" in kw:
        count = int(kw["detectable_content:number_placeholders"]["num_placeholders"])
        extra.append(" ".join(f"[place {n}]" for n in range(1, count + 1)) + ".")
    body = list(sentences) + extra
    if "detectable_format:number_highlighted_sections" in kw:
        count = int(kw["detectable_format:number_highlighted_sections"]["num_highlights"])
        body += [f"See *part {n}* here." for n in range(1, count + 1)]
    if "detectable_format:constrained_response" in kw:
        body.append("My answer is yes.")
    if (k := kw.get("length_constraints:number_paragraphs")) is not None:
        text = "\n\n***\n\n".join(_groups(body, int(k["num_paragraphs"])))
    elif (k := kw.get("length_constraints:nth_paragraph_first_word")) is not None:
        groups = _groups(body, int(k["num_paragraphs"]))
        nth = int(k["nth_paragraph"]) - 1
        if nth < len(groups):
            groups[nth] = f"{str(k['first_word']).capitalize()} {groups[nth]}"
        text = "\n\n".join(groups)
    elif (k := kw.get("detectable_format:multiple_sections")) is not None:
        groups = _groups(body, int(k["num_sections"]))
        text = "\n\n".join(f"{k['section_spliter']} {n}\n{g}" for n, g in enumerate(groups, 1))
    elif "combination:two_responses" in kw and len(body) > 1:
        half = max(1, len(body) // 2)
        first, second = " ".join(body[:half]), " ".join(body[half:]) or "Another one."
        if first == second:
            second += " Again."
        text = f"{first}\n******\n{second}"
    else:
        text = " ".join(body)
    if "combination:two_responses" in kw and "\n******\n" not in text:  # the layout, twice
        text = f"{text}\n******\n{text} Again."
    if (k := kw.get("detectable_format:number_bullet_lists")) is not None:  # one block, at the end
        text += "\n" + "\n".join(f"* {word} item." for word in vocabulary[: int(k["num_bullets"])])
    if "detectable_format:title" in kw:
        text = f"<<A Short Note>>\n\n{text}"
    if (k := kw.get("combination:repeat_prompt")) is not None:
        text = f"{k['prompt_to_repeat']}\n\n{text}"
    if (k := kw.get("detectable_content:postscript")) is not None:
        text += f"\n{k['postscript_marker']} Thanks."  # one newline: not a paragraph of its own
    if (k := kw.get("startend:end_checker")) is not None:
        text += f"\n{k['end_phrase']}"
    if "punctuation:no_comma" in kw:
        text = text.replace(",", "")
    if "change_case:english_lowercase" in kw:
        text = text.lower()
    if "change_case:english_capital" in kw:
        text = text.upper()
    if "detectable_format:json_format" in kw:
        text = json.dumps({"answer": text}, ensure_ascii=False)
    if "startend:quotation" in kw:
        text = f'"{text}\n"'  # the closing quote on a line of its own: the last bullet ends its line
    return text


def compose(
    prompt: str,
    instructions: Sequence[Mapping[str, Any]],
    *,
    topic: Sequence[str] | None = None,
    accept: Callable[[str], bool] | None = None,
) -> str | None:
    """A response that strictly follows every instruction (IFEval's ids and kwargs), or ``None``
    when no size tried satisfies them all (contradictory instructions). With ``topic`` words it
    also names one, with a few English filler words (the substance gate's test); ``accept``
    (the env's own scoring) must pass it too."""
    kws = _instructions(instructions)
    language = next((str(kw["language"]) for n, kw in kws if n == "language:response_language"), None)
    if language is not None and language not in LANGUAGE_TEXT:
        return None
    vocabulary = _vocabulary(kws) or ["sky"]
    named = _vocabulary(kws, list(topic or ()))
    s_low, s_high = _bounds(kws, "length_constraints:number_sentences", "num_sentences")
    w_low, w_high = _bounds(kws, "length_constraints:number_words", "num_words")
    groups = max([int(kw.get("num_paragraphs") or kw.get("num_sections") or 1) for _, kw in kws] or [1])
    counts = sorted(
        {max(groups, s_low + d) for d in (-3, -2, -1, 0, 1, 2, 4)} | {max(groups, 3), max(groups, 6)}
    )
    counts = [c for c in counts if c < max(s_high, groups + 1)] or [max(1, min(groups, s_high - 1))]
    for count in counts:
        target = (
            (w_low + min(w_high, w_low + 40)) // 2
            if w_low
            else (min(60, w_high // 2) if w_high < 10**6 else 40)
        )
        lengths = [0, max(1, math.ceil(target / count)), max(1, (w_high - 5) // (count + 6)), 3, 8, 1]
        for length in dict.fromkeys(lengths):
            size = count
            if length == 0 and w_low and s_high >= 10**6 and s_low == 0:  # natural: ~12 words a sentence
                size = max(count, math.ceil(target / 12))
            sentences = _sentences(size, length, vocabulary, language)
            if named:
                first = sentences[0]
                sentences[0] = (
                    f"{named[0].capitalize()} {' '.join(vocabulary[:7])} {first[:1].lower()}{first[1:]}"
                )
            text = _build(kws, prompt, sentences, vocabulary)
            if all(check(name, kw, text, prompt) for name, kw in kws) and (accept is None or accept(text)):
                return text
    return None


__all__ = ["LANGUAGE_TEXT", "WORDS", "compose"]
