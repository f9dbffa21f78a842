"""A response built to follow a prompt's IFEval instructions: the oracle of ``instructions-v0``.

IFEval publishes prompts, not answers. ``check_env`` and the audit need a completion that must
pass each task, and the agreement bench needs responses to score, so :func:`compose` writes one:
plain sentences sized, laid out and decorated for every listed instruction, tried over a few
sizes until our strict checks (and the env's substance gate, through ``accept``) all pass. It is
a form-following text with no content; no model wrote it. A prompt whose instructions
contradict each other gets ``None``.

The gate refuses word lists and a passage repeated, so the English is generated, not cycled:
each clause fills a template from word lists of coprime lengths (``the quiet baker carried the
bread near the market``), so the clauses of a long answer rarely share a trigram, and every slot
has alternatives, so a forbidden word or a capped letter (``less than 1 letter e``) drops words,
never the grammar. Other languages use a few distinct sentences of :data:`LANGUAGE_TEXT`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rlvr_gym.verifiers.ifeval import ifeval_kwargs
from rlvr_gym.verifiers.instructions import check
from rlvr_gym.verifiers.substance import words

# fmt: off
SLOTS: dict[str, tuple[str, ...]] = {
    "det": ("the", "a", "our", "my", "his", "one", "some", "her"),
    "adj": (
        "quiet", "small", "busy", "young", "kind", "calm", "lucky", "proud", "sunny", "gentle",
        "tall", "jolly", "curious", "steady", "hungry", "merry", "bold", "shy", "good",
    ),
    "subj": (
        "baker", "farmer", "teacher", "sailor", "painter", "doctor", "neighbor", "student",
        "gardener", "poet", "driver", "cook", "nurse", "pilot", "miller", "tailor", "singer",
        "boy", "girl", "dog", "fox", "monk", "judge",
    ),
    "verb": (
        "carried", "brought", "found", "painted", "cooked", "fixed", "bought", "sold", "washed",
        "moved", "held", "took", "shared", "built", "packed", "opened", "cleaned", "mended",
        "lifted", "hid", "drew", "kept", "left", "showed", "sought", "dropped", "pulled",
        "wrapped", "lost",
    ),
    "obj": (
        "bread", "basket", "letter", "map", "lamp", "boat", "kettle", "blanket", "book", "box",
        "drum", "coat", "cake", "soup", "rope", "bowl", "ladder", "quilt", "hammer", "bucket",
        "kite", "scarf", "jar", "violin", "broom", "wagon", "puzzle", "radio", "globe", "sock",
        "mug",
    ),
    "prep": ("in", "at", "near", "by", "behind", "beside", "outside", "inside"),
    "place": (
        "market", "harbor", "garden", "school", "library", "village", "bridge", "station",
        "kitchen", "farm", "hill", "river", "mill", "field", "bakery", "shop", "yard",
    ),
    "and": ("and", "so", "but", "then", "while"),
    "about": ("about", "of", "on", "for"),
    "mark": (
        "name", "address", "date", "city", "phone", "company", "email", "time", "amount", "title",
        "country", "day", "job", "year", "street", "town", "song", "boss", "team", "price",
    ),
}
"""Every slot's words. The content lists have distinct prime lengths, so a pair of them (a
trigram's core) recurs only after hundreds of clauses; ``mark`` names placeholders."""
# fmt: on

TEMPLATES = (
    ("det", "adj", "subj", "verb", "det", "obj", "prep", "det", "place"),
    ("prep", "det", "place", "det", "subj", "verb", "det", "adj", "obj"),
    ("det", "subj", "prep", "det", "place", "verb", "det", "adj", "obj"),
)
"""Clauses of nine words (about a third of them function words: English by the gate's count)."""
SHORT = ("det", "subj", "verb", "det", "obj")
"""A five-word clause, for answers capped at few words per sentence."""

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
"""Plain English sentences (the agreement bench's stand-in where no response is composed)."""

LANGUAGE_TEXT: dict[str, str] = {
    "en": "The morning was quiet and the garden path was wet after the rain. We walked along the river to the old bridge. The market was busy in the afternoon. In the evening the family ate dinner together. My grandfather reads the newspaper in the park every day. Next summer we will visit the mountains with our friends.",
    "ar": "كان الصباح هادئا وكانت الحديقة مبللة بعد المطر. ذهب الأطفال إلى المدرسة في الصباح الباكر. كان السوق مزدحما في فترة الظهيرة. وفي المساء تناولت العائلة العشاء معا. يقرأ جدي الجريدة في الحديقة كل يوم. سنزور الجبال مع أصدقائنا في الصيف القادم.",
    "bg": "Сутринта беше тиха и градината беше мокра след дъжда. Децата отидоха на училище рано сутринта. Пазарът беше оживен следобед. Вечерта семейството вечеря заедно. Дядо ми чете вестник в парка всеки ден. Следващото лято ще посетим планините с нашите приятели.",
    "bn": "সকালটা শান্ত ছিল এবং বৃষ্টির পরে বাগানটা ভেজা ছিল। শিশুরা খুব সকালে স্কুলে গেল। বিকেলে বাজারটা খুব ব্যস্ত ছিল। সন্ধ্যায় পরিবারের সবাই একসাথে রাতের খাবার খেল। আমার দাদু প্রতিদিন পার্কে বসে খবরের কাগজ পড়েন। আগামী গ্রীষ্মে আমরা বন্ধুদের সাথে পাহাড়ে বেড়াতে যাব।",
    "de": "Der Morgen war ruhig und der Garten war nach dem Regen nass. Die Kinder gingen früh zur Schule. Am Nachmittag war der Markt voller Menschen. Am Abend aß die Familie gemeinsam zu Abend. Mein Großvater liest jeden Tag im Park die Zeitung. Nächsten Sommer besuchen wir mit unseren Freunden die Berge.",
    "fa": "صبح آرام بود و باغ پس از باران خیس بود. بچه‌ها صبح زود به مدرسه رفتند. بازار در بعد از ظهر شلوغ بود. شب خانواده با هم شام خوردند. پدربزرگم هر روز در پارک روزنامه می‌خواند. تابستان آینده با دوستانمان به کوهستان می‌رویم.",
    "fi": "Aamu oli hiljainen ja puutarha oli märkä sateen jälkeen. Lapset menivät aikaisin kouluun. Iltapäivällä tori oli täynnä ihmisiä. Illalla perhe söi päivällistä yhdessä. Isoisäni lukee sanomalehteä puistossa joka päivä. Ensi kesänä matkustamme ystäviemme kanssa vuorille.",
    "gu": "સવાર શાંત હતી અને વરસાદ પછી બગીચો ભીનો હતો. બાળકો વહેલી સવારે શાળાએ ગયા. બપોરે બજારમાં ઘણી ભીડ હતી. સાંજે આખા પરિવારે સાથે બેસીને ભોજન કર્યું. મારા દાદા દરરોજ બગીચામાં છાપું વાંચે છે. આવતા ઉનાળામાં અમે મિત્રો સાથે પર્વતો પર ફરવા જઈશું.",
    "hi": "सुबह शांत थी और बारिश के बाद बगीचा गीला था। बच्चे सुबह जल्दी स्कूल गए और उन्होंने बहुत कुछ सीखा। दोपहर में बाज़ार में बहुत भीड़ थी। शाम को पूरे परिवार ने साथ बैठकर खाना खाया। मेरे दादाजी हर दिन पार्क में अख़बार पढ़ते हैं। अगली गर्मियों में हम अपने दोस्तों के साथ पहाड़ों पर घूमने जाएँगे।",
    "it": "La mattina era tranquilla e il giardino era bagnato dopo la pioggia. I bambini sono andati a scuola presto. Nel pomeriggio il mercato era pieno di gente. La sera la famiglia ha cenato insieme. Mio nonno legge il giornale al parco ogni giorno. La prossima estate visiteremo le montagne con i nostri amici.",
    "kn": "ಬೆಳಿಗ್ಗೆ ಶಾಂತವಾಗಿತ್ತು ಮತ್ತು ಮಳೆಯ ನಂತರ ತೋಟ ಒದ್ದೆಯಾಗಿತ್ತು. ಮಕ್ಕಳು ಬೇಗನೆ ಶಾಲೆಗೆ ಹೋದರು. ಮಧ್ಯಾಹ್ನ ಮಾರುಕಟ್ಟೆಯಲ್ಲಿ ತುಂಬಾ ಜನರಿದ್ದರು. ಸಂಜೆ ಕುಟುಂಬದವರೆಲ್ಲರೂ ಒಟ್ಟಿಗೆ ಊಟ ಮಾಡಿದರು. ನನ್ನ ಅಜ್ಜ ಪ್ರತಿದಿನ ಉದ್ಯಾನದಲ್ಲಿ ಪತ್ರಿಕೆ ಓದುತ್ತಾರೆ. ಮುಂದಿನ ಬೇಸಿಗೆಯಲ್ಲಿ ನಾವು ಸ್ನೇಹಿತರೊಂದಿಗೆ ಬೆಟ್ಟಗಳಿಗೆ ಹೋಗುತ್ತೇವೆ.",
    "ko": "아침은 조용했고 비가 온 뒤 정원은 젖어 있었다. 아이들은 아침 일찍 학교에 갔다. 오후에는 시장이 사람들로 붐볐다. 저녁에는 가족이 함께 밥을 먹었다. 할아버지는 매일 공원에서 신문을 읽으신다. 내년 여름에는 친구들과 함께 산에 갈 것이다.",
    "mr": "सकाळ शांत होती आणि पावसानंतर बाग ओली झाली होती. मुले सकाळी लवकर शाळेत गेली आणि त्यांनी खूप काही शिकले. दुपारी बाजारात खूप गर्दी होती. संध्याकाळी सगळ्या कुटुंबाने एकत्र जेवण केले. माझे आजोबा रोज बागेत वर्तमानपत्र वाचतात. पुढच्या उन्हाळ्यात आम्ही मित्रांसोबत डोंगरावर फिरायला जाणार आहोत.",
    "ne": "बिहान शान्त थियो र पानी परेपछि बगैंचा भिजेको थियो। केटाकेटीहरू बिहान सबेरै विद्यालय गए। दिउँसो बजारमा धेरै भीड थियो। साँझ परिवारका सबैले सँगै खाना खाए। मेरो हजुरबुबा हरेक दिन पार्कमा पत्रिका पढ्नुहुन्छ। अर्को गर्मीमा हामी साथीहरूसँग पहाड घुम्न जानेछौं।",
    "pa": "ਸਵੇਰ ਸ਼ਾਂਤ ਸੀ ਅਤੇ ਮੀਂਹ ਤੋਂ ਬਾਅਦ ਬਾਗ਼ ਗਿੱਲਾ ਸੀ। ਬੱਚੇ ਸਵੇਰੇ ਜਲਦੀ ਸਕੂਲ ਗਏ। ਦੁਪਹਿਰ ਨੂੰ ਬਾਜ਼ਾਰ ਵਿੱਚ ਬਹੁਤ ਭੀੜ ਸੀ। ਸ਼ਾਮ ਨੂੰ ਸਾਰੇ ਪਰਿਵਾਰ ਨੇ ਇਕੱਠੇ ਖਾਣਾ ਖਾਧਾ। ਮੇਰੇ ਦਾਦਾ ਜੀ ਹਰ ਰੋਜ਼ ਪਾਰਕ ਵਿੱਚ ਅਖ਼ਬਾਰ ਪੜ੍ਹਦੇ ਹਨ। ਅਗਲੀਆਂ ਗਰਮੀਆਂ ਵਿੱਚ ਅਸੀਂ ਦੋਸਤਾਂ ਨਾਲ ਪਹਾੜਾਂ ਤੇ ਜਾਵਾਂਗੇ।",
    "pt": "A manhã estava tranquila e o jardim estava molhado depois da chuva. As crianças foram cedo para a escola. À tarde o mercado estava cheio de gente. À noite a família jantou junta. Meu avô lê o jornal no parque todos os dias. No próximo verão vamos visitar as montanhas com os nossos amigos.",
    "ru": "Утро было тихим, и сад был мокрым после дождя. Дети рано утром пошли в школу. Днём на рынке было много людей. Вечером вся семья ужинала вместе. Мой дедушка каждый день читает газету в парке. Следующим летом мы поедем в горы с друзьями.",
    "sw": "Asubuhi ilikuwa tulivu na bustani ilikuwa imelowa baada ya mvua. Watoto walikwenda shuleni mapema asubuhi. Mchana soko lilikuwa na watu wengi sana. Jioni familia yote ilikula chakula pamoja. Babu yangu husoma gazeti bustanini kila siku. Majira ya joto yajayo tutatembelea milima pamoja na marafiki zetu.",
    "ta": "காலை அமைதியாக இருந்தது மழைக்குப் பிறகு தோட்டம் ஈரமாக இருந்தது. குழந்தைகள் அதிகாலையில் பள்ளிக்குச் சென்றனர். மதியம் சந்தையில் நிறைய மக்கள் இருந்தனர். மாலையில் குடும்பத்தினர் அனைவரும் ஒன்றாக உணவு உண்டனர். என் தாத்தா தினமும் பூங்காவில் செய்தித்தாள் படிக்கிறார். அடுத்த கோடையில் நாங்கள் நண்பர்களுடன் மலைகளுக்குச் செல்வோம்.",
    "te": "ఉదయం ప్రశాంతంగా ఉంది మరియు వర్షం తర్వాత తోట తడిగా ఉంది. పిల్లలు ఉదయాన్నే బడికి వెళ్లారు. మధ్యాహ్నం మార్కెట్ చాలా రద్దీగా ఉంది. సాయంత్రం కుటుంబం అంతా కలిసి భోజనం చేసింది. మా తాతయ్య ప్రతిరోజూ పార్కులో వార్తాపత్రిక చదువుతారు. వచ్చే వేసవిలో మేము స్నేహితులతో కలిసి కొండలకు వెళ్తాము.",
    "th": "ตอนเช้าเงียบสงบและสวนเปียกหลังฝนตก เด็กๆ ไปโรงเรียนแต่เช้า ตอนบ่ายตลาดมีคนมากมาย ตอนเย็นครอบครัวกินข้าวด้วยกัน คุณปู่อ่านหนังสือพิมพ์ในสวนสาธารณะทุกวัน ฤดูร้อนหน้าเราจะไปเที่ยวภูเขากับเพื่อนๆ",
    "ur": "صبح پرسکون تھی اور بارش کے بعد باغ گیلا تھا۔ بچے صبح سویرے اسکول گئے۔ دوپہر کو بازار میں بہت رش تھا۔ شام کو پورے خاندان نے مل کر کھانا کھایا۔ میرے دادا ہر روز پارک میں اخبار پڑھتے ہیں۔ اگلی گرمیوں میں ہم دوستوں کے ساتھ پہاڑوں پر جائیں گے۔",
    "vi": "Buổi sáng yên tĩnh và khu vườn ướt sau cơn mưa. Bọn trẻ đi học từ sáng sớm. Buổi chiều chợ rất đông người. Buổi tối cả gia đình cùng nhau ăn cơm. Ông tôi đọc báo trong công viên mỗi ngày. Mùa hè tới chúng tôi sẽ đi leo núi cùng bạn bè.",
}
"""Six short sentences per language IFEval asks for (written here; langdetect reads each text
as its code): a several-paragraph answer uses distinct ones before any repeats."""

_SENTENCE_END = re.compile(r"(?<=[.!?।۔])\s+|(?<=[ก-๛])\s+(?=[ก-๛])")


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


def _allowed(kws: list[tuple[str, Mapping[str, Any]]]) -> Callable[[str], bool]:
    """Whether a word can trip no forbidden word, capped keyword or capped letter."""
    avoid: list[str] = []
    letters = ""
    for name, kw in kws:
        if name == "keywords:forbidden_words":
            avoid += [w.lower() for w in kw.get("forbidden_words") or []]
        elif name == "keywords:frequency" and kw.get("relation") == "less than":
            avoid.append(str(kw["keyword"]).lower())
        elif name == "keywords:letter_frequency" and kw.get("let_relation") == "less than":
            letters += str(kw["letter"]).lower()
    return lambda word: not any(a in word.lower() for a in avoid) and not set(word.lower()) & set(letters)


@dataclass
class _Marks:
    """What the clauses carry besides filler: words to mention, capitals, highlights."""

    mentions: list[str] = field(default_factory=list)
    shouts: int = 0
    highlights: int = 0


def _clause(slots: Mapping[str, Sequence[str]], n: int, short: bool, marks: _Marks) -> str:
    """The ``n``-th clause: its template and each slot's word rotate with ``n``."""
    template = SHORT if short else TEMPLATES[n % len(TEMPLATES)]
    out = []
    for k, slot in enumerate(template):
        choices = slots[slot]
        if not choices:
            continue
        word = choices[(n + 7 * k) % len(choices)]
        if slot == "subj" and n < marks.shouts:
            word = word.upper()
        if slot == "obj" and n < len(marks.mentions):
            word = " ".join([word, *slots["about"][:1], marks.mentions[n]])
        out.append(word)
    if n < marks.highlights:
        out[-1] = f"*{out[-1]}*"
    return " ".join(out)


def _english(
    count: int, length: int, slots: Mapping[str, Sequence[str]], marks: _Marks, start: int = 0
) -> list[str]:
    """``count`` sentences of about ``length`` words, clauses joined by a conjunction (0: one
    clause each; three clauses at least, two short ones where ``length`` is short: fewer have
    too few words of their own); marks that more clauses would carry get sentences of their own."""
    short = 0 < length < 7
    per = math.ceil(length / 9) if length >= 7 else math.ceil((2 if length else 3) / count)
    total = max(count * per, len(marks.mentions), marks.shouts, marks.highlights)
    clauses = [_clause(slots, start + n, short, marks) for n in range(total)]
    groups = [clauses[i * per : (i + 1) * per] for i in range(count)] + [[c] for c in clauses[count * per :]]
    out = []
    for n, group in enumerate(groups):
        joins = slots["and"]
        conjunction = f" {joins[n % len(joins)]} " if joins else " "
        sentence = conjunction.join(group)
        out.append(sentence[:1].upper() + sentence[1:] + ".")
    return out


def language_sentences(language: str) -> list[str]:
    """The sentences of ``LANGUAGE_TEXT[language]`` (Thai's are separated by spaces)."""
    return _SENTENCE_END.split(LANGUAGE_TEXT[language])


def _other(count: int, language: str, topic: str | None, start: int = 0) -> list[str]:
    """``count`` sentences of ``language`` from the ``start``-th (distinct until
    :data:`LANGUAGE_TEXT` runs out), the first led by the topic word."""
    units = language_sentences(language)
    out = [units[(start + n) % len(units)] for n in range(count)]
    if topic:
        out[0] = f"{topic.capitalize()}: {out[0]}"
    return out


def _groups(items: list[str], count: int) -> list[str]:
    size, extra = divmod(len(items), count)
    out, start = [], 0
    for n in range(count):
        end = start + size + (n < extra)
        out.append(" ".join(items[start:end]))
        start = end
    return out


def _layout(kw: Mapping[str, Mapping[str, Any]], body: list[str]) -> str:
    """``body`` in the paragraphs or sections asked for (one paragraph otherwise)."""
    if (k := kw.get("length_constraints:number_paragraphs")) is not None:
        return "\n\n***\n\n".join(_groups(body, int(k["num_paragraphs"])))
    if (k := kw.get("length_constraints:nth_paragraph_first_word")) is not None:
        groups = _groups(body, int(k["num_paragraphs"]))
        nth = int(k["nth_paragraph"]) - 1
        if nth < len(groups):
            groups[nth] = f"{str(k['first_word']).capitalize()} {groups[nth]}"
        return "\n\n".join(groups)
    if (k := kw.get("detectable_format:multiple_sections")) is not None:
        groups = _groups(body, int(k["num_sections"]))
        return "\n\n".join(f"{k['section_spliter']} {n}\n{g}" for n, g in enumerate(groups, 1))
    return " ".join(body)


def _build(
    kws: list[tuple[str, Mapping[str, Any]]],
    sentences: list[str],
    second: list[str],
    slots: Mapping[str, Sequence[str]],
    english: bool,
) -> str:
    """``sentences`` (and ``second``, a second response's, where two are asked for) decorated,
    laid out and cased for every instruction."""
    kw: dict[str, Mapping[str, Any]] = {}
    for name, value in kws:
        kw.setdefault(name, value)
    extra: list[str] = []
    for name, value in kws:
        if name == "keywords:existence" and not english:  # English clauses mention them
            extra.append("(" + " ".join(value["keywords"]) + ")")
        elif name == "keywords:frequency" and value["relation"] == "at least" and not english:
            extra.append(" ".join([str(value["keyword"])] * int(value["frequency"])) + ".")
        elif name == "keywords:letter_frequency" and value["let_relation"] == "at least":
            extra.append(str(value["letter"]) * int(value["let_frequency"]) + ".")
    if "detectable_content:number_placeholders" in kw:
        count = int(kw["detectable_content:number_placeholders"]["num_placeholders"])
        names = [*slots["mark"], *slots["obj"], *slots["place"]]
        extra.append(" ".join(f"[{names[n % len(names)]}]" for n in range(count)) + ".")
    body = list(sentences) + extra
    if not english and "detectable_format:number_highlighted_sections" in kw:
        count = int(kw["detectable_format:number_highlighted_sections"]["num_highlights"])
        body += [f"*{n}*" for n in range(1, count + 1)]
    if "detectable_format:constrained_response" in kw:
        body.append("My answer is yes.")
    layouts = ("length_constraints:number_paragraphs", "length_constraints:nth_paragraph_first_word")
    if (
        "combination:two_responses" in kw
        and len(body) > 1
        and not any(name in kw for name in (*layouts, "detectable_format:multiple_sections"))
    ):
        half = len(body) // 2
        text = f"{' '.join(body[:half])}\n******\n{' '.join(body[half:])}"
    else:
        text = _layout(kw, body)
        if "combination:two_responses" in kw:  # the layout twice, the second over other sentences
            text = f"{text}\n******\n{_layout(kw, list(second))}"
    if (k := kw.get("detectable_format:number_bullet_lists")) is not None:  # one block, at the end
        bullets = _english(int(k["num_bullets"]), 1, slots, _Marks(), start=500)
        text += "\n" + "\n".join(f"* {line}" for line in bullets)
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


def _marks(kws: list[tuple[str, Mapping[str, Any]]], topic: list[str]) -> _Marks:
    marks = _Marks(mentions=topic[:1])
    for name, kw in kws:
        if name == "keywords:existence":
            marks.mentions += [str(k) for k in kw["keywords"]]
        elif name == "keywords:frequency" and kw["relation"] == "at least":
            marks.mentions += [str(kw["keyword"])] * int(kw["frequency"])
        elif name == "change_case:capital_word_frequency" and kw["capital_relation"] == "at least":
            marks.shouts = max(marks.shouts, int(kw["capital_frequency"]))
        elif name == "detectable_format:number_highlighted_sections":
            marks.highlights = max(marks.highlights, int(kw["num_highlights"]))
    return marks


def compose(
    prompt: str,
    instructions: Sequence[Mapping[str, Any]],
    *,
    topic: Sequence[str] | None = None,
    accept: Callable[[str], bool] | None = None,
) -> str | None:
    """A response that strictly follows every instruction (IFEval's ids and kwargs), or ``None``
    when no size tried satisfies them all (contradictory instructions). With ``topic`` words it
    also names one (the substance gate's test); ``accept`` (the env's own scoring) must pass it
    too."""
    kws = _instructions(instructions)
    language = next((str(kw["language"]) for n, kw in kws if n == "language:response_language"), "en")
    if language not in LANGUAGE_TEXT:
        return None
    english = language == "en"
    allowed = _allowed(kws)
    slots = {slot: [w for w in words if allowed(w)] for slot, words in SLOTS.items()}
    if not all(slots[slot] for slot in ("subj", "verb", "obj", "place")):  # capped letters leave no clause
        return None
    named = [t for t in topic or () if allowed(t)]
    repeated = " ".join(str(kw["prompt_to_repeat"]) for n, kw in kws if n == "combination:repeat_prompt")
    if set(words(repeated)) & {t.lower() for t in topic or ()}:  # the repeated request names the topic
        named = []
    marks = _marks(kws, named)
    s_low, s_high = _bounds(kws, "length_constraints:number_sentences", "num_sentences")
    w_low, w_high = _bounds(kws, "length_constraints:number_words", "num_words")
    groups = max([int(kw.get("num_paragraphs") or kw.get("num_sections") or 1) for _, kw in kws] or [1])
    counts = sorted(
        {max(groups, s_low + d) for d in (-3, -2, -1, 0, 1, 2, 4)} | {max(groups, 3), max(groups, 6)}
    )
    counts = [c for c in counts if c < max(s_high, groups + 1)] or [max(1, min(groups, s_high - 1))]
    counts = [c for c in counts if c >= 3] + [c for c in counts if c < 3]  # three clauses say something
    target = (
        (w_low + min(w_high, w_low + 40)) // 2 if w_low else (min(60, w_high // 2) if w_high < 10**6 else 40)
    )
    for count in counts:
        # the longest sentences an upper word bound allows (none: 10**6 words would be ~10**5 a sentence)
        longest = [max(1, (w_high - 5) // (count + 6))] if w_high < 10**6 else []
        lengths = [0, max(1, math.ceil(target / count)), *longest, 3, 8, 1]
        for length in dict.fromkeys(lengths):
            size = count
            if length == 0 and w_low and s_high >= 10**6 and s_low == 0:  # one clause: nine words a sentence
                size = max(count, math.ceil(target / 9))
            if english:
                sentences = _english(size, length, slots, marks)
                second = _english(size, length, slots, _Marks(), start=len(sentences) * 9 + 7)
            else:
                sentences = _other(size, language, named[0] if named else None)
                second = _other(size, language, None, start=size)
            text = _build(kws, sentences, second, slots, english)
            if all(check(name, kw, text, prompt) for name, kw in kws) and (accept is None or accept(text)):
                return text
    return None


__all__ = ["ENGLISH", "LANGUAGE_TEXT", "SLOTS", "TEMPLATES", "compose", "language_sentences"]
