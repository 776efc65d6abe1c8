"""The salience gate: small talk is kept in the episodic log for provenance and time queries, but not
indexed for recall, so "ok" and "哈哈" never crowd a token budget."""

from __future__ import annotations

import re

from hindsight_core.text.normalize import normalize

SMALL_TALK: frozenset[str] = frozenset(
    {
        # English
        "ok", "okay", "k", "kk", "yes", "yep", "yeah", "yup", "no", "nope", "sure", "thanks", "thank you",
        "thx", "ty", "cool", "nice", "great", "good", "fine", "got it", "i see", "alright", "all right",
        "lol", "haha", "hahaha", "hmm", "hm", "uh", "um", "oh", "ah", "wow", "bye", "goodbye", "hi",
        "hello", "hey", "good morning", "good night", "see you", "np", "no problem", "sounds good",
        "ok thanks", "okay thanks", "thanks a lot", "great thanks", "perfect", "awesome", "right",
        # Chinese
        "好", "好的", "好吧", "好滴", "嗯", "嗯嗯", "哦", "噢", "哈哈", "哈哈哈", "呵呵", "嘿嘿", "谢谢",
        "谢谢你", "多谢", "感谢", "好的谢谢", "好的 谢谢", "行", "可以", "没问题", "是的", "对", "对的",
        "收到", "明白", "知道了", "了解", "再见", "拜拜", "你好", "您好", "早上好", "晚安", "早", "嗯好",
        "ok 谢谢", "好 谢谢", "不客气", "没事", "哇", "厉害",
    }
)

# Laughter is one syllable repeated ("hahaha", "hehe", "lolol", 哈哈哈): a repetition of the same unit,
# not any string of those letters, so "Hill" or "Hello Kitty" (short answers with content) stay in.
_REPEATED_LAUGH = re.compile(r"^(?:(ha|he|hi|ho|哈|呵|嘿|嘻|嗯|哦|啊)\1+h?|lo(?:l|ol)+|l+m+f*a+o+)$")
# Chinese sentence-final particles and English fillers that do not change a phrase's meaning.
_PARTICLES = re.compile(r"(?:[呢呀啊吧哦啦嘛哈喔噢滴]+|\s+(?:then|so|man|guys|lol))$")


def is_small_talk(text: str) -> bool:
    norm = normalize(text)
    if not norm:
        return True  # punctuation or emoji only
    stripped = _PARTICLES.sub("", norm).strip()
    if norm in SMALL_TALK or (stripped and stripped in SMALL_TALK):
        return True
    return bool(_REPEATED_LAUGH.match(norm.replace(" ", "")))
