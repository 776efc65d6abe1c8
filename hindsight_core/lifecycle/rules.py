# ruff: noqa: E501  (pattern tables: one rule per line reads better than wrapped regexes)
"""The offline extractor: English and Chinese patterns for facts, preferences, states and events.

Each pattern yields one atomic memory written in the third person ("用户对花生过敏", "The user lives in
Shanghai"), with a *slot* (subject + attribute) and a *value* so the integration step can tell a
duplicate (same slot, same value) from a contradiction (same exclusive slot, new value) without a model.
Assistant turns never originate a memory: an assistant's confirmation ("好的，我记住了你对花生过敏")
only adds its episode as a source of a memory the user stated, so a superseded value leaves no stale
confirmation behind."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from hindsight_core.lifecycle.schema import ExtractedMemory, ExtractionContext, ExtractionResult
from hindsight_core.text.normalize import normalize
from hindsight_core.text.script import has_cjk
from hindsight_core.types import AGENT_ROLES, Memory

_USER_ROLES = frozenset({"user", "human", "customer", "client"})

# Value characters: a Chinese value runs to the next clause break; English values to the next
# punctuation, then stop words cut them (see _clean_en).
_V = r"[^，,。！!？?；;、\s（）()“”\"：:]"
_PLACE = r"(?P<v>[A-Z][\w'’-]*(?:\s+(?:of\s+|de\s+|du\s+|la\s+|le\s+|del\s+)?[A-Z][\w'’-]*)*)"
_VEN = r"(?P<v>[^,.;!?()\n\"“”]{1,80})"
_ZH_AMOUNT = re.compile(
    r"(?P<v>(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百千]+)\s*(?:万|千|百|k|K|w|W)?\s*"
    r"(?:元|块钱|块|人民币|美元|美金|刀|欧元)|(?:\d+(?:\.\d+)?|[一二两三四五六七八九十百千]+)\s*(?:万|千))"
)
_EN_AMOUNT = re.compile(
    r"(?P<v>[$€£¥]\s?\d[\d,]*(?:\.\d+)?\s*(?:k|K|m|M|million|thousand|grand)?"
    r"|\d[\d,]*(?:\.\d+)?\s*(?:k|K)?\s*(?:dollars|bucks|USD|euros|EUR|pounds|GBP|yuan|RMB|CNY|元))"
)
_EN_STOP = re.compile(
    r"\s+(?:but|because|since|so that|so|and then|and i|and we|when|which|who|although|though|while|"
    r"as well|anymore|right now|these days|lately|recently|at the moment|too|a lot|very much|so much)\b.*$",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(r"(?:吗|呢|么)[？?]?$|[？?]$")
_SENTENCE = re.compile(r"(?<=[。！？!?；;\n])|(?<=[.])\s+")
_PRONOUN_OBJECTS = frozenset({"it", "that", "this", "them", "you", "him", "her", "those", "these", "one"})


@dataclass(frozen=True)
class _Subject:
    zh: str  # "用户" or the speaker's name
    en: str  # "The user" or the speaker's name
    key: str  # slot prefix

    @property
    def en_pos(self) -> str:
        return f"{self.en}'s" if not self.en.endswith("s") else f"{self.en}'"


@dataclass
class _Hit:
    kind: str
    content: str
    importance: int
    slot: str | None = None
    value: str | None = None
    exclusive: bool = False
    change: bool = False
    change_from: str | None = None


_Builder = Callable[[re.Match[str], _Subject, str], "_Hit | None"]


@dataclass(frozen=True)
class _Rule:
    group: str  # at most one hit per group and sentence (the first rule that fires wins)
    pattern: re.Pattern[str]
    build: _Builder


def _key(value: str) -> str:
    return normalize(value)


def _clean_zh(value: str) -> str:
    return value.strip().rstrip(".。的了啦呢啊吧哦").strip()


def _clean_en(value: str, *, cut: str = "") -> str:
    value = _EN_STOP.sub("", value.strip())
    if cut:
        value = re.split(rf"\s+(?:{cut})\b", value, maxsplit=1, flags=re.IGNORECASE)[0]
    value = re.sub(r"\s+(?:now|then|anyway|actually|though|either|also)$", "", value, flags=re.IGNORECASE)
    words = value.split()
    return " ".join(words[:12]).strip(" '’\"-")


def _swap_zh(text: str, s: _Subject) -> str:
    return text.replace("我们", s.zh).replace("我的", f"{s.zh}的").replace("我", s.zh)


_EN_SWAP = [
    (re.compile(r"\bI'm\b|\bI am\b", re.IGNORECASE), "{S} is"),
    (re.compile(r"\bI've\b|\bI have\b"), "{S} has"),
    (re.compile(r"\bmy\b", re.IGNORECASE), "{P}"),
    (re.compile(r"\bmine\b", re.IGNORECASE), "{P}"),
    (re.compile(r"\bme\b|\bmyself\b", re.IGNORECASE), "{S}"),
    (re.compile(r"\bI\b"), "{S}"),
]


def _swap_en(text: str, s: _Subject) -> str:
    subject = s.en if s.en != "The user" else "the user"
    possessive = s.en_pos if s.en != "The user" else "the user's"
    for pattern, repl in _EN_SWAP:
        text = pattern.sub(repl.format(S=subject, P=possessive), text)
    return text[:1].upper() + text[1:]


def _verb_s(verb: str) -> str:
    verb = verb.lower()
    return verb + ("es" if verb.endswith(("s", "sh", "ch")) else "s")


# -- Chinese ------------------------------------------------------------------------------------------
def _zh(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _name_zh(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
    v = m.group("v")
    if v.startswith(("了", "过", "做", "个")):
        return None
    return _Hit("fact", f"{s.zh}名叫{v}", 4, f"{s.key}:name", v, exclusive=True)


def _budget(m: re.Match[str], s: _Subject, sentence: str) -> _Hit | None:
    after = sentence[m.end() - len("预算") :] if "预算" in m.group(0) else sentence[m.start() :]
    amount = _ZH_AMOUNT.search(after)
    if amount is not None:
        v = amount.group("v").replace(" ", "")
        cap = "上限" if "上限" in sentence or "最多" in sentence else ""
        return _Hit("fact", f"{s.zh}的预算{cap}是{v}", 4, f"{s.key}:budget", v, exclusive=True)
    amount_en = _EN_AMOUNT.search(after)
    if amount_en is not None:
        v = amount_en.group("v").strip()
        return _Hit("fact", f"{s.en_pos} budget is {v}", 4, f"{s.key}:budget", v, exclusive=True)
    return None


def _state_zh(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
    body = re.sub(r"^(?:我们|我)", "", m.group(0))
    return _Hit("state", f"{s.zh}{_clean_zh(body)}", 2)


_ZH_RULES: list[_Rule] = [
    _Rule("name", _zh(r"我(?:的名字)?(?:叫|名叫|的名字是)(?P<v>[\u4e00-\u9fffA-Za-z·]{1,8}?)(?=[，,。！!？?；;、\s]|$)"),
          _name_zh),
    _Rule("home", _zh(rf"(?:搬到了|搬到|搬家到了?|搬去了?|搬来了?)(?P<v>{_V}{{1,20}})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}现在住在{_clean_zh(m.group('v'))}（搬家后）", 3,
                               f"{s.key}:home", _clean_zh(m.group("v")), exclusive=True, change=True)),
    _Rule("home", _zh(rf"我们?(?:现在|目前|一直)?(?:住在|家住|家在|定居在)(?P<v>{_V}{{1,20}})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}住在{_clean_zh(m.group('v'))}", 3,
                               f"{s.key}:home", _clean_zh(m.group("v")), exclusive=True)),
    _Rule("work", _zh(rf"我(?:现在|目前)?(?:在|于)(?P<v>{_V}{{1,20}}?)(?:工作|上班|任职)"),
          lambda m, s, _: _Hit("fact", f"{s.zh}在{m.group('v')}工作", 3, f"{s.key}:workplace", m.group("v"),
                               exclusive=True)),
    _Rule("job", _zh(rf"我(?:现在|目前)?(?:是一名|是一位|的职业是|的工作是)(?P<v>{_V}{{1,15}})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}的职业是{_clean_zh(m.group('v'))}", 3, f"{s.key}:job",
                               _clean_zh(m.group("v")), exclusive=True)),
    _Rule("allergy", _zh(rf"(?:我|本人)[^，,。！!？?；;]{{0,4}}?(?:对于|对)(?P<v>{_V}{{1,12}}?)(?:严重|有点|有些)?过敏"),
          lambda m, s, _: _Hit("fact", f"{s.zh}对{m.group('v')}过敏", 5, f"{s.key}:allergy:{_key(m.group('v'))}",
                               "yes")),
    _Rule("allergy", _zh(rf"(?:我|本人)(?:有|患有)(?P<v>{_V}{{1,10}}?)过敏"),
          lambda m, s, _: _Hit("fact", f"{s.zh}对{m.group('v')}过敏", 5, f"{s.key}:allergy:{_key(m.group('v'))}",
                               "yes")),
    _Rule("budget", _zh(r"预算"), _budget),
    _Rule("deadline", _zh(rf"(?:截止日期|截止时间|截止|deadline|期限)(?:是|为|定在|定为|在|改到|改成|调整到|调整为|延到)?(?P<v>{_V}{{2,20}})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}的截止日期是{_clean_zh(m.group('v'))}", 4, f"{s.key}:deadline",
                               _clean_zh(m.group("v")), exclusive=True)),
    _Rule("pref", _zh(rf"我最(?:喜欢|爱)的(?P<c>{_V}{{1,8}}?)是(?P<v>{_V}{{1,20}})"),
          lambda m, s, _: _Hit("preference", f"{s.zh}最喜欢的{m.group('c')}是{_clean_zh(m.group('v'))}", 3,
                               f"{s.key}:favourite:{_key(m.group('c'))}", _clean_zh(m.group("v")), exclusive=True)),
    _Rule("pref", _zh(rf"我(?P<m>(?:也|还|很|非常|特别|比较|一直|真的|其实|最|都)*)(?P<verb>不喜欢|讨厌|不爱|受不了|反感|不想要|不吃|不喝)(?P<v>{_V}{{1,30}})"),
          lambda m, s, _: _Hit("preference", f"{s.zh}{m.group('verb')}{_clean_zh(m.group('v'))}", 3,
                               f"{s.key}:pref:{_key(_clean_zh(m.group('v')))}", "dislike", exclusive=True)),
    _Rule("pref", _zh(rf"我(?P<m>(?:也|还|很|非常|特别|比较|一直|真的|其实|最|挺|蛮|更|都)*)(?P<verb>喜欢|爱吃|爱喝|爱看|爱玩|偏好|偏爱|喜爱|钟爱|倾向于|倾向)(?P<v>{_V}{{1,30}})"),
          lambda m, s, _: _Hit("preference", f"{s.zh}{m.group('verb')}{_clean_zh(m.group('v'))}", 3,
                               f"{s.key}:pref:{_key(_clean_zh(m.group('v')))}", "like", exclusive=True)),
    _Rule("remember", _zh(r"(?:请|帮我|你要|你)?记住(?!了)(?:一下)?[：:，,]?\s*(?P<v>[^。！!？?]{2,80})"),
          lambda m, s, _: _Hit("fact", _swap_zh(m.group("v").strip(), s), 4)),
    _Rule("uses", _zh(r"(?:从(?P<f>[^，,。！!？?；;、\s]{1,20}?))?(?:迁移到|迁移至|迁到|切换到|切换成|改用|换成了|换到)了?(?P<v>[A-Za-z0-9\u4e00-\u9fff.+#-]{1,30})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}改用{_clean_zh(m.group('v'))}", 3, f"{s.key}:uses",
                               _clean_zh(m.group("v")), change=True,
                               change_from=_clean_zh(m.group("f")) if m.group("f") else None)),
    _Rule("uses", _zh(r"我们?(?:现在|目前|一直)?(?:在用|用的是|使用|采用)(?P<v>[A-Za-z0-9\u4e00-\u9fff.+#-]{1,30})"),
          lambda m, s, _: _Hit("fact", f"{s.zh}使用{_clean_zh(m.group('v'))}", 3, f"{s.key}:uses",
                               _clean_zh(m.group("v")))),
    _Rule("event", _zh(rf"(?:我们|我)?(?P<t>今天|明天|后天|今晚|明晚|下周[一二三四五六日天末]?|下星期[一二三四五六日天]?|下个?月(?:初|底|中)?|这周[一二三四五六日天末]?|周[一二三四五六日末]|月底|年底|\d{{1,2}}月\d{{1,2}}[日号]|\d{{1,2}}[日号])(?P<x>[^，,。！!？?；;]{{0,6}}?)(?:要|会|打算|准备|计划|得|将)(?P<v>{_V}{{2,30}})"),
          lambda m, s, _: _Hit("event", f"{s.zh}{m.group('t')}{m.group('x')}要{_clean_zh(m.group('v'))}", 3)),
    _Rule("event", _zh(rf"我们?(?:已经)?(?:决定|选定了?|最终选了?|选择了)(?P<v>{_V}{{2,30}})"),
          lambda m, s, _: _Hit("event", f"{s.zh}决定{_clean_zh(m.group('v'))}", 3)),
    _Rule("event", _zh(rf"我(?:已经)?(?:约了|预约了|挂了)(?P<v>{_V}{{2,30}})"),
          lambda m, s, _: _Hit("event", f"{s.zh}约了{_clean_zh(m.group('v'))}", 3)),
    _Rule("state", _zh(rf"^(?:我们|我)?(?:最近|现在|目前|正在|这段时间|这阵子|这几天)(?:在|正在|开始)?{_V}{{2,30}}"),
          _state_zh),
]


# -- English ------------------------------------------------------------------------------------------
def _en(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


_I = r"\b(?:I|i)(?:'ve|’ve|'m|’m)?"
_WE = r"\b(?:I|i|We|we)(?:'ve|’ve|'re|’re)?"


def _like_en(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
    v = _clean_en(m.group("v"))
    if not v or _key(v) in _PRONOUN_OBJECTS or _key(v).startswith(("it ", "that ", "this ")):
        return None
    verb = m.group("verb").lower()
    return _Hit("preference", f"{s.en} {_verb_s(verb)} {v}", 3, f"{s.key}:pref:{_key(v)}", "like", exclusive=True)


def _dislike_en(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
    v = _clean_en(m.group("v"))
    if not v or _key(v) in _PRONOUN_OBJECTS:
        return None
    return _Hit("preference", f"{s.en} dislikes {v}", 3, f"{s.key}:pref:{_key(v)}", "dislike", exclusive=True)


def _state_en(template: str) -> _Builder:
    def build(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
        v = _clean_en(m.group("v"))
        if not v:
            return None
        verb = m.groupdict().get("verb") or ""
        return _Hit("state", template.format(S=s.en, verb=verb.lower(), v=v), 2)

    return build


def _remember_en(m: re.Match[str], s: _Subject, _: str) -> _Hit | None:
    v = m.group("v").strip().rstrip(".")
    if len(v) < 3 or v.lower().startswith(("when", "what", "how", "the time", "to ")):
        return None
    return _Hit("fact", _swap_en(v, s), 4)


_EN_RULES: list[_Rule] = [
    _Rule("name", _en(r"\b(?i:my\s+name\s+is|my\s+name's|i\s+am\s+called|i'm\s+called)\s+(?P<v>[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)?)"),
          lambda m, s, _: _Hit("fact", f"{s.en_pos} name is {m.group('v')}", 4, f"{s.key}:name", m.group("v"),
                               exclusive=True)),
    _Rule("nickname", _en(r"\b(?i:call\s+me|calls\s+me|go\s+by|goes\s+by)\s+(?P<v>[A-Z][\w'’-]+)"),
          lambda m, s, _: _Hit("fact", f"{s.en} goes by {m.group('v')}", 3, f"{s.key}:nickname", m.group("v"),
                               exclusive=True)),
    _Rule("home", _en(rf"{_WE}\s+(?:(?i:just|recently|finally|have|had|already)\s+)*(?i:moved|relocated)\s+(?:(?i:down|up|over|back|out)\s+)?(?i:to)\s+{_PLACE}"),
          lambda m, s, _: _Hit("fact", f"{s.en} lives in {m.group('v')} now (moved there recently)", 3, f"{s.key}:home",
                               m.group("v"), exclusive=True, change=True)),
    _Rule("home", _en(rf"{_WE}\s+(?:(?i:currently|now|still)\s+)?(?i:live|am\s+living|are\s+living|living|reside)\s+(?i:in)\s+{_PLACE}"),
          lambda m, s, _: _Hit("fact", f"{s.en} lives in {m.group('v')}", 3, f"{s.key}:home", m.group("v"),
                               exclusive=True)),
    _Rule("origin", _en(rf"\b(?i:i'm|i’m|i\s+am)\s+(?:(?i:originally)\s+)?(?i:from)\s+{_PLACE}"),
          lambda m, s, _: _Hit("fact", f"{s.en} is from {m.group('v')}", 3, f"{s.key}:origin", m.group("v"),
                               exclusive=True)),
    _Rule("job", _en(rf"{_I}\s+(?i:work|am\s+working|working)\s+(?i:as)\s+(?:(?i:an?)\s+)?{_VEN}"),
          lambda m, s, _: _Hit("fact", f"{s.en} works as {_clean_en(m.group('v'), cut='at|for|in')}", 3,
                               f"{s.key}:job", _clean_en(m.group("v"), cut="at|for|in"), exclusive=True)),
    _Rule("job", _en(r"\b(?i:my\s+job\s+is|my\s+profession\s+is|i\s+work\s+as)\s+(?:(?i:an?)\s+)?" + _VEN),
          lambda m, s, _: _Hit("fact", f"{s.en_pos} job is {_clean_en(m.group('v'))}", 3, f"{s.key}:job",
                               _clean_en(m.group("v")), exclusive=True)),
    _Rule("job", _en(r"\b(?i:i'm|i’m|i\s+am)\s+(?i:an?)\s+(?P<v>(?:[\w-]+\s+){0,2}(?i:engineer|developer|programmer|teacher|nurse|doctor|designer|manager|lawyer|student|writer|artist|scientist|counselor|counsellor|accountant|chef|consultant|researcher|analyst|architect|photographer|musician|painter|dentist|pharmacist))\b"),
          lambda m, s, _: _Hit("fact", f"{s.en} is a {m.group('v')}", 3, f"{s.key}:job", m.group("v"),
                               exclusive=True)),
    _Rule("work", _en(rf"{_I}\s+(?i:work|am\s+working|working)\s+(?i:at|for)\s+{_VEN}"),
          lambda m, s, _: _Hit("fact", f"{s.en} works at {_clean_en(m.group('v'), cut='as|in|on')}", 3,
                               f"{s.key}:workplace", _clean_en(m.group("v"), cut="as|in|on"), exclusive=True)),
    _Rule("allergy", _en(r"\b(?i:i'm|i’m|i\s+am|i've\s+been|i\s+have\s+been)\s+(?:(?i:very|really|severely|deathly|quite|seriously|highly|also|so)\s+)*(?i:allergic)\s+(?i:to)\s+" + _VEN),
          lambda m, s, _: _Hit("fact", f"{s.en} is allergic to {_clean_en(m.group('v'))}", 5,
                               f"{s.key}:allergy:{_key(_clean_en(m.group('v')))}", "yes")),
    _Rule("allergy", _en(r"\b(?i:i\s+have|i've\s+got|i\s+got)\s+(?:(?i:an?|a\s+severe|a\s+bad)\s+)?(?P<v>[\w -]{1,30}?)\s+(?i:allergy)"),
          lambda m, s, _: _Hit("fact", f"{s.en} is allergic to {m.group('v')}", 5,
                               f"{s.key}:allergy:{_key(m.group('v'))}", "yes")),
    _Rule("budget", _en(r"\b(?i:budget)\b"), _budget),
    _Rule("deadline", _en(r"\b(?i:the\s+)?(?i:deadline|due\s+date)(?:\s+(?i:for)\s+(?P<w>[^,.;!?]{1,30}?))?\s+(?i:is\s+now|is|was|has\s+been\s+moved\s+to|moved\s+to|changed\s+to|got\s+moved\s+to)\s+" + _VEN),
          lambda m, s, _: _Hit("fact", f"The deadline{' for ' + m.group('w') if m.group('w') else ''} is "
                               f"{_clean_en(m.group('v'))}", 4, f"{s.key}:deadline:{_key(m.group('w') or '')}",
                               _clean_en(m.group("v")), exclusive=True)),
    _Rule("pref", _en(r"\b(?i:my\s+favou?rite)\s+(?P<c>[\w ]{1,25}?)\s+(?i:is|are)\s+" + _VEN),
          lambda m, s, _: _Hit("preference", f"{s.en_pos} favorite {m.group('c')} is {_clean_en(m.group('v'))}", 3,
                               f"{s.key}:favourite:{_key(m.group('c'))}", _clean_en(m.group("v")), exclusive=True)),
    _Rule("pref", _en(r"\b(?:I|i)\s+(?:(?i:really|just|also|absolutely|still|truly)\s+)?(?P<verb>(?i:don't|don’t|do\s+not|dont)\s+(?i:like|enjoy|love|care\s+for)|(?i:hate|dislike|detest|can't\s+stand|can’t\s+stand|cannot\s+stand))\s+" + _VEN),
          _dislike_en),
    _Rule("pref", _en(r"\b(?:I|i)\s+(?:(?i:really|just|also|absolutely|still|do|truly|totally|definitely)\s+)*(?P<verb>(?i:like|love|enjoy|prefer|adore))\s+" + _VEN),
          _like_en),
    _Rule("remember", _en(r"(?:^|\b(?i:please|just|also|and|so)\s+)(?i:remember)\s+(?:(?i:that)\s+)?(?P<v>[^?!]{3,200})"),
          _remember_en),
    _Rule("uses", _en(rf"{_WE}\s+(?:(?i:have|just|recently|finally|already|also)\s+)*(?i:migrated|switched|upgraded|moved\s+over)\s+(?:(?i:from)\s+(?P<f>[^,.;!?]{{1,30}}?)\s+)?(?i:to)\s+{_VEN}"),
          lambda m, s, _: _Hit("fact", f"{s.en} switched to {_clean_en(m.group('v'), cut='for|as|last|this|in|on')}", 3,
                               f"{s.key}:uses", _clean_en(m.group("v"), cut="for|as|last|this|in|on"), change=True,
                               change_from=_clean_en(m.group("f")) if m.group("f") else None)),
    _Rule("uses", _en(rf"{_WE}\s+(?:(?i:currently|still|now|mainly|mostly|also)\s+)?(?i:use|are\s+using|am\s+using|using|run\s+on|rely\s+on)\s+{_VEN}"),
          lambda m, s, _: _Hit("fact", f"{s.en} uses {_clean_en(m.group('v'), cut='for|to|as|in|with|on')}", 3,
                               f"{s.key}:uses", _clean_en(m.group("v"), cut="for|to|as|in|with|on"))),
    _Rule("event", _en(r"\b(?:I|i|We|we)\s+(?i:have|'ve\s+got|have\s+got|got)\s+(?P<v>(?i:an?|my|the)\s+(?:[\w-]+\s+){0,2}(?i:appointment|meeting|interview|exam|flight|trip|date|call|party|surgery|check-?up|checkup|class|concert|game|wedding|conference)\b[^,.;!?]{0,60})"),
          lambda m, s, _: _Hit("event", f"{s.en} has {_clean_en(m.group('v'))}", 3)),
    _Rule("event", _en(r"\b(?i:i'm|i’m|i\s+am|we're|we\s+are)\s+(?i:going|flying|traveling|travelling|heading|driving)\s+(?i:to)\s+(?P<v>[^,.;!?]{2,60}?)\s+(?P<t>(?i:next|this|on|tomorrow|tonight|in|at)\b[^,.;!?]{0,30})"),
          lambda m, s, _: _Hit("event", f"{s.en} is going to {m.group('v')} {m.group('t').strip()}", 3)),
    _Rule("event", _en(r"\b(?:I|i|We|we)(?:'ve|’ve)?\s+(?:(?i:have|just|finally|already)\s+)*(?i:decided|chose|chosen|picked|agreed)\s+(?P<p>(?i:to|on|that)\s+)" + _VEN),
          lambda m, s, _: _Hit("event", f"{s.en} decided {m.group('p')}{_clean_en(m.group('v'))}", 3)),
    _Rule("event", _en(r"\b(?i:we'll|we\s+will|i'll|i\s+will|let's)\s+(?i:go\s+with)\s+" + _VEN),
          lambda m, s, _: _Hit("event", f"{s.en} decided to go with {_clean_en(m.group('v'))}", 3)),
    _Rule("state", _en(r"\b(?i:i'm|i’m|i\s+am)\s+(?i:currently|now|still)\s+" + _VEN),
          _state_en("{S} is currently {v}")),
    _Rule("state", _en(r"\b(?i:i've|i’ve|i\s+have)\s+(?i:been)\s+(?P<v>\w+ing\b[^,.;!?]{0,60})"),
          _state_en("{S} has been {v}")),
    _Rule("state", _en(r"\b(?i:i'm|i’m|i\s+am)\s+(?P<verb>(?i:working\s+on|learning|studying|training\s+for|preparing\s+for|taking|reading|writing|building|planning))\s+" + _VEN),
          _state_en("{S} is {verb} {v}")),
]

def _sentences(text: str) -> Iterator[str]:
    for part in _SENTENCE.split(text):
        part = part.strip()
        if part:
            yield part


def _is_question(sentence: str) -> bool:
    return bool(_QUESTION_ZH.search(sentence.rstrip("。.!！ ")))


def _swap_assistant(text: str) -> str:
    """Rewrite an assistant's confirmation as if the user said it ("你对花生过敏" → "我对花生过敏")."""
    zh = re.sub("[你我]", lambda m: "我" if m.group(0) == "你" else "你", text)
    pairs = {"you're": "I'm", "you are": "I am", "your": "my", "you": "I"}
    return re.sub(r"\b(?:you're|you are|your|you)\b", lambda m: pairs[m.group(0).lower()], zh, flags=re.IGNORECASE)


def extract_hits(text: str, subject: _Subject) -> list[_Hit]:
    """Every memory the patterns find in one text, in order."""
    hits: list[_Hit] = []
    for sentence in _sentences(text):
        if _is_question(sentence):
            continue
        rules = _ZH_RULES + _EN_RULES if has_cjk(sentence) else _EN_RULES
        fired: set[str] = set()
        found: list[_Hit] = []
        for rule in rules:
            if rule.group in fired or (rule.group == "state" and found):
                continue
            match = rule.pattern.search(sentence)
            if match is None:
                continue
            hit = rule.build(match, subject, sentence)
            if hit is None or not hit.content.strip():
                continue
            fired.add(rule.group)
            found.append(hit)
        hits += found
    return hits


class RuleExtractor:
    """The offline default extractor (no model, no network): see the module docstring."""

    name = "rules"
    uses_llm = False

    def extract(self, episodes: Sequence[Memory], context: ExtractionContext) -> ExtractionResult:
        out: list[ExtractedMemory] = []
        by_key: dict[tuple[str, str], ExtractedMemory] = {}
        for episode in episodes:
            role = (episode.role or "user").strip()
            corroborating = role.lower() in AGENT_ROLES
            if corroborating or role.lower() in _USER_ROLES:
                subject = _Subject("用户", "The user", "user")
            else:  # a named speaker (multi-party logs such as LoCoMo): facts are about them
                subject = _Subject(role, role, normalize(role).replace(" ", "_") or "user")
            text = _swap_assistant(episode.content) if corroborating else episode.content
            for hit in extract_hits(text, subject):
                key = (hit.slot, _key(hit.value or "")) if hit.slot else ("content", _key(hit.content))
                assert key[0] is not None
                known = by_key.get((key[0], key[1]))
                if known is not None:
                    if episode.id not in known.source_ids:
                        known.source_ids.append(episode.id)
                    known.corroborates = known.corroborates and corroborating
                    continue
                item = ExtractedMemory(
                    kind=hit.kind,  # type: ignore[arg-type]
                    content=hit.content,
                    importance=hit.importance,
                    source_ids=[episode.id],
                    slot=hit.slot,
                    value=hit.value,
                    exclusive=hit.exclusive,
                    change=hit.change,
                    change_from=hit.change_from,
                    corroborates=corroborating,
                )
                by_key[(key[0], key[1])] = item
                out.append(item)
        return ExtractionResult(out, 0)
