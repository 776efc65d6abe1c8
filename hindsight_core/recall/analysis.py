"""Stage 1, query analysis: history cues, a time window, entities. English and Chinese.

Relative expressions that name a calendar unit (上周, last month, 3 days ago) are resolved here to whole
calendar units, which dateparser does not do (it returns one instant, and reads 上次 or "may" as
dates). Absolute dates ("in May 2023", "on 8 May") go through dateparser with the period it reports."""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta
from typing import Any

from hindsight_core.recall.types import QueryAnalysis, TimeWindow
from hindsight_core.text.entities import extract_entities
from hindsight_core.text.script import has_cjk

HISTORY_CUES_ZH = (
    "上次", "上回", "之前", "以前", "先前", "此前", "你说过", "我说过", "你提过", "我提过", "提到过", "说过",
    "聊过", "讨论过", "问过", "告诉过", "还记得", "我记得", "记得", "刚才", "刚刚", "那次", "那天",
)
HISTORY_CUES_EN = (
    "last time", "you said", "you told me", "you mentioned", "you suggested", "you recommended",
    "i told you", "i said", "i mentioned", "as i said", "we discussed", "we talked", "we spoke",
    "remember", "recall", "earlier", "previously", "before", "the other day", "again",
)
_EN_CUE = re.compile(r"\b(" + "|".join(re.escape(c) for c in HISTORY_CUES_EN) + r")\b", re.IGNORECASE)

_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9, "十": 10, "半": 0}
_EN_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
               "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "few": 3, "a few": 3, "several": 3}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if not text or any(c not in _ZH_DIGITS for c in text):
        return None
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)
    return _ZH_DIGITS[text[0]] if len(text) == 1 else None


def _day(now: datetime, offset: int = 0) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=offset)


def _week(now: datetime, offset: int) -> tuple[datetime, datetime]:
    start = _day(now, -now.weekday()) + timedelta(weeks=offset)
    return start, start + timedelta(weeks=1)


def _month_start(year: int, month: int, tz: Any) -> datetime:
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    return datetime(year, month, 1, tzinfo=tz)


def _month(now: datetime, offset: int) -> tuple[datetime, datetime]:
    start = _month_start(now.year, now.month + offset, now.tzinfo)
    return start, _month_start(start.year, start.month + 1, now.tzinfo)


def _year(now: datetime, offset: int) -> tuple[datetime, datetime]:
    start = datetime(now.year + offset, 1, 1, tzinfo=now.tzinfo)
    return start, start.replace(year=start.year + 1)


def _ago(now: datetime, n: int, unit: str) -> tuple[datetime, datetime]:
    """"3 days ago": the day itself, with a day of slack each side (people round)."""
    if unit == "day":
        return _day(now, -n - 1), _day(now, -n + 2)
    if unit == "week":
        return _day(now, -7 * n - 3), _day(now, -7 * n + 4)
    if unit == "month":
        start, _ = _month(now, -n)
        return start - timedelta(days=7), _month(now, -n)[1] + timedelta(days=7)
    start, end = _year(now, -n)
    return start, end


_ZH_UNIT = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week", "个月": "month", "月": "month",
            "年": "year"}
_ZH_AGO = re.compile(r"([0-9零一二两俩三四五六七八九十]+)\s*(天|日|周|个?星期|个?礼拜|个月|年)(?:以前|之前|前)")
_EN_AGO = re.compile(
    r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|few|several|a couple of)\s+"
    r"(day|week|month|year)s?\s+ago\b", re.IGNORECASE,
)


def _relative_rules(now: datetime) -> list[tuple[re.Pattern[str], Any]]:
    def day(offset: int) -> Any:
        return lambda m: (_day(now, offset), _day(now, offset + 1))

    return [
        # specific before general: 上周三 before 上周
        (re.compile(r"\blast (" + "|".join(_WEEKDAYS) + r")\b", re.I), lambda m: _last_weekday(now, m.group(1))),
        (re.compile(r"上(?:周|个?星期|个?礼拜)([一二三四五六日天])"), lambda m: _zh_weekday(now, m.group(1))),
        (re.compile(r"大前天"), day(-3)),
        (re.compile(r"前天|the day before yesterday", re.I), day(-2)),
        (re.compile(r"昨天|昨日|昨晚|yesterday|last night", re.I), day(-1)),
        (re.compile(r"今天|今日|今早|今晚|\btoday\b|this morning|this afternoon|tonight|earlier today", re.I), day(0)),
        (re.compile(r"上上周|上上个?星期|上上个?礼拜|the week before last", re.I), lambda m: _week(now, -2)),
        (re.compile(r"上周|上个?星期|上个?礼拜|last week", re.I), lambda m: _week(now, -1)),
        (re.compile(r"这周|本周|这个?星期|这个?礼拜|this week", re.I), lambda m: _week(now, 0)),
        (re.compile(r"上上个月", re.I), lambda m: _month(now, -2)),
        (re.compile(r"上个月|上月|last month", re.I), lambda m: _month(now, -1)),
        (re.compile(r"这个月|本月|this month", re.I), lambda m: _month(now, 0)),
        (re.compile(r"前年|the year before last", re.I), lambda m: _year(now, -2)),
        (re.compile(r"去年|last year", re.I), lambda m: _year(now, -1)),
        (re.compile(r"今年|this year", re.I), lambda m: _year(now, 0)),
        (_ZH_AGO, lambda m: _zh_ago(now, m)),
        (_EN_AGO, lambda m: _en_ago(now, m)),
    ]


def _zh_ago(now: datetime, m: re.Match[str]) -> tuple[datetime, datetime] | None:
    n = _zh_number(m.group(1))
    unit = _ZH_UNIT.get(m.group(2).lstrip("个"), _ZH_UNIT.get(m.group(2)))
    return None if n is None or unit is None else _ago(now, n, unit)


def _en_ago(now: datetime, m: re.Match[str]) -> tuple[datetime, datetime]:
    raw = m.group(1).lower()
    n = int(raw) if raw.isdigit() else _EN_NUMBERS.get(raw, 1)
    return _ago(now, n, m.group(2).lower())


def _last_weekday(now: datetime, name: str) -> tuple[datetime, datetime]:
    target = _WEEKDAYS.index(name.lower())
    back = (now.weekday() - target) % 7 or 7
    return _day(now, -back), _day(now, -back + 1)


def _zh_weekday(now: datetime, char: str) -> tuple[datetime, datetime]:
    target = 6 if char in "日天" else "一二三四五六".index(char)
    start, _ = _week(now, -1)
    return start + timedelta(days=target), start + timedelta(days=target + 1)


# Absolute dates for dateparser: a month name, a year, or a numeric/Chinese date must be present, so
# that verbs like "may" or words like "second" are not read as dates.
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_ABSOLUTE = re.compile(
    rf"\b(?:(?:in|on|during|since|around)\s+)?(?:\d{{1,2}}(?:st|nd|rd|th)?\s+)?(?:{_MONTHS})\b\.?"
    rf"(?:\s+\d{{1,2}}(?:st|nd|rd|th)?(?!\d))?(?:,?\s+\d{{4}})?"
    r"|\b(?:in|during|since)\s+(?:19|20)\d{2}\b"
    r"|\b\d{4}-\d{1,2}-\d{1,2}\b"
    r"|(?:\d{4}年)?[0-9一二三四五六七八九十]{1,3}月(?:份)?(?:[0-9一二三四五六七八九十]{1,3}[日号])?"
    r"|\d{4}年",
    re.IGNORECASE,
)
_MAY_VERB = re.compile(r"^may$", re.IGNORECASE)

_parser_lock = threading.Lock()
_parsers: dict[str, Any] = {}


def _date_parser(language: str) -> Any:
    """One parser per language: trying every locale on each expression costs tens of milliseconds."""
    from dateparser.date import DateDataParser

    with _parser_lock:
        if language not in _parsers:
            _parsers[language] = DateDataParser(
                languages=[language],
                settings={"PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True, "PREFER_DAY_OF_MONTH": "first"},
            )
        return _parsers[language]


_MONTH_NUMBER = {name: i + 1 for i, name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"))}
_MONTH_NUMBER.update({name[:3]: number for name, number in list(_MONTH_NUMBER.items())})
_MONTH_NUMBER["sept"] = 9
_EN_DATE = re.compile(
    rf"^(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+)?(?P<m>{_MONTHS})\.?(?:\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?)?"
    r"(?:,?\s+(?P<y>\d{4}))?$",
    re.IGNORECASE,
)
_ZH_DATE = re.compile(
    r"^(?:(?P<y>\d{4})年)?(?:(?P<m>[0-9一二三四五六七八九十]{1,3})月份?)?(?:(?P<d>[0-9一二三四五六七八九十]{1,3})[日号])?$"
)


def _calendar(year: int | None, month: int | None, day: int | None, now: datetime) -> tuple[datetime, datetime] | None:
    """A window for a (partial) calendar date; without a year, the latest one not in the future."""
    tz = now.tzinfo
    try:
        if month is None:
            return None if year is None else _year(datetime(year, 1, 1, tzinfo=tz), 0)
        explicit = year is not None
        year_ = year if year is not None else now.year
        start = datetime(year_, month, day or 1, tzinfo=tz)
        if not explicit and start > now:
            year_ -= 1
            start = datetime(year_, month, day or 1, tzinfo=tz)
    except ValueError:
        return None
    if day is not None:
        return start, start + timedelta(days=1)
    return _month(start, 0)


def _parse_absolute(bare: str, now: datetime) -> tuple[datetime, datetime] | None:
    if re.fullmatch(r"\d{4}", bare):
        return _calendar(int(bare), None, None, now)
    iso = re.fullmatch(r"(\d{4})-(\d{1,2})-(\d{1,2})", bare)
    if iso:
        return _calendar(int(iso.group(1)), int(iso.group(2)), int(iso.group(3)), now)
    en = _EN_DATE.match(bare)
    if en:
        day = en.group("d1") or en.group("d2")
        year = en.group("y")
        return _calendar(int(year) if year else None, _MONTH_NUMBER[en.group("m").lower().rstrip(".")],
                         int(day) if day else None, now)
    zh = _ZH_DATE.match(bare)
    if zh and (zh.group("y") or zh.group("m")):
        month = _zh_number(zh.group("m")) if zh.group("m") else None
        day = _zh_number(zh.group("d")) if zh.group("d") else None
        if month is not None and not 1 <= month <= 12:
            return None
        return _calendar(int(zh.group("y")) if zh.group("y") else None, month, day, now)
    return None


def _absolute(text: str, now: datetime) -> tuple[datetime, datetime, str] | None:
    for match in _ABSOLUTE.finditer(text):
        expr = match.group(0).strip()
        bare = re.sub(r"^(?:in|on|during|since|around)\s+", "", expr, flags=re.I).rstrip(".")
        if _MAY_VERB.match(bare) and not re.search(r"\bin\s+may\b", expr, re.I):
            continue  # "may I ask" is not a month
        span = _parse_absolute(bare, now)
        if span is None:  # an unusual spelling: let dateparser try
            span = _dateparser_span(bare, now)
        if span is not None:
            return span[0], span[1], expr
    return None


def _dateparser_span(bare: str, now: datetime) -> tuple[datetime, datetime] | None:
    language = "zh" if has_cjk(bare) else "en"
    data = _date_parser(language).get_date_data(bare.replace("份", ""))
    when = data.date_obj
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=now.tzinfo)
    period = data.period or "day"
    if period == "year":
        return _year(when, 0)
    if period == "month":
        return _month(when, 0)
    if period == "week":
        return _week(when, 0)
    return _day(when), _day(when, 1)


# Grammar of the past, not vocabulary: English auxiliaries and regular past forms, the perfect, the
# Chinese aspect particles 了 and 过. It tells whether a time unit that contains "now" is asked about, and
# whether a question asks for a value as it was (no recall-time update) or as it is.
_EN_PAST = re.compile(r"\b(?:did|was|were|had|\w{2,}[^e\W]ed)\b", re.IGNORECASE)
_EN_HAVE = re.compile(r"\b(?:has|have)\b|'ve\b", re.IGNORECASE)
#: "have" as the verb itself, not the perfect's auxiliary: after do-support ("What car do I have?", "does
#: she have"), or before "to" / "got" (obligation, "have got") or an article, quantifier or number that
#: opens its object ("I have a headache", "Do you have any tips?"). Grammar words, a closed class.
_HAVE_VERB_BEFORE = re.compile(r"\b(?:do|does|don't|doesn't)\s+(?:\w+\s+)?$", re.IGNORECASE)
_HAVE_VERB_AFTER = re.compile(r"^\s+(?:to|got|a|an|any|some|no|much|many|enough|\d)\b", re.IGNORECASE)
_ZH_ASPECT = re.compile(r"[了过]")
#: 了 that closes its clause (a modal particle may follow) marks a state as it now is ("我家小孩几岁了？",
#: "我感冒了，能吃什么药？"), not an event that is over.
_ZH_CLAUSE_END = re.compile(r"^[吗呢啊吧呀啦]?\s*(?:[，,。？?！!；;]|$)")


def speaks_of_the_past(text: str) -> bool:
    """Whether ``text`` asks about the past: "Where did I live?", "What have I told you?", "我去过哪些地方？",
    or a history cue ("last time", "上次"). Not "What car do I have?" (possession), "我对什么过敏？" (过 of
    the word 过敏), "我家小孩几岁了？" (a state as it is now): those ask for the current value, and a
    recall-time update applies to them (supersede.py)."""
    return _english_past(text) or _chinese_past(text) or bool(find_history_cues(text))


def _english_past(text: str) -> bool:
    if _EN_PAST.search(text):
        return True
    return any(not (_HAVE_VERB_BEFORE.search(text, 0, m.start()) or _HAVE_VERB_AFTER.match(text[m.end():]))
               for m in _EN_HAVE.finditer(text))


def _chinese_past(text: str) -> bool:
    """An aspect particle by jieba's segmentation: 过 after its verb (a word of its own, or the end of one:
    "吃过", "去过"; not the 过 that begins 过敏 or 过年), 了 as a word of its own (not 了解, 除了) that does not
    close its clause."""
    if not _ZH_ASPECT.search(text):
        return False
    from hindsight_core.recall.keyword import segmenter

    end = 0
    for word in segmenter().lcut(text):  # the words cover the text in order
        end += len(word)
        if word.endswith("过") or (word == "了" and not _ZH_CLAUSE_END.match(text[end:])):
            return True
    return False


def find_time_window(text: str, now: datetime) -> TimeWindow | None:
    """The period of the memories a query points at, or ``None``.

    A unit that contains the moment of the request ("tonight", "today", 这周) is the time the request
    is *for* ("a restaurant for tonight") unless the query speaks of the past ("what did I eat
    today?"): only then does it point at memories."""
    for pattern, resolve in _relative_rules(now):
        match = pattern.search(text)
        if match:
            span = resolve(match)
            if span is not None:
                if span[1] > now and not speaks_of_the_past(text):
                    return None
                return TimeWindow(start=span[0], end=span[1], expression=match.group(0))
    found = _absolute(text, now)
    if found is not None:
        return TimeWindow(start=found[0], end=found[1], expression=found[2])
    return None


#: "last time", "our last chat", "the previous conversation", "上次", "上回": the last conversation as a
#: unit of time, as "last week" is a calendar one.
_LAST_CONVERSATION = re.compile(
    r"\b(?:last|latest|previous|most recent) (?:time|chat|conversation|session|talk)\b|\bour last\b|上次|上回",
    re.IGNORECASE,
)


def refers_to_last_conversation(text: str) -> bool:
    return bool(_LAST_CONVERSATION.search(text))


def find_history_cues(text: str) -> list[str]:
    cues = [cue for cue in HISTORY_CUES_ZH if cue in text]
    # "我记得" contains "记得": report the longest cue only
    cues = [c for c in cues if not any(c != o and c in o for o in cues)]
    cues += [m.group(1).lower() for m in _EN_CUE.finditer(text)]
    return list(dict.fromkeys(cues))


def analyze(query: str, now: datetime, known_entities: list[str] | None = None) -> QueryAnalysis:
    """``known_entities`` (the namespace's) are matched case-insensitively, so "caroline" finds Caroline."""
    entities = list(extract_entities(query))
    if known_entities:
        lowered = query.casefold()
        for name in known_entities:
            if name in entities:
                continue
            key = name.casefold()
            if len(key) < 2:
                continue
            at = lowered.find(key)
            if at < 0:
                continue
            before = lowered[at - 1] if at > 0 else " "
            after = lowered[at + len(key)] if at + len(key) < len(lowered) else " "
            if has_cjk(key[0]) or (not before.isalnum() and not after.isalnum()):
                entities.append(name)
    return QueryAnalysis(
        query=query,
        history_cues=find_history_cues(query),
        time_window=find_time_window(query, now),
        entities=entities,
        last_conversation=refers_to_last_conversation(query),
    )
