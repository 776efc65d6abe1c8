"""Six kinds of sentence, told apart by meaning: a request for something to be chosen or made for the
asker, a person's statement of a standing state of theirs, a statement that something changed, a
turn with no content to recall (thanks, greetings, "好的"), a question about the asker's own life, and a
bare answer that means what it answers ("Hill", "The one near the station.").

A stated allergy, condition, habit or preference should shape every later request it bears on
("推荐点甜品" after "我对芒果过敏"), although the two share no words and sit far apart in embedding space.
No list of domains can name every such pair, so recall asks two questions any pair has in common: is
the query a request (rather than a question of fact or about the past), and is the memory a standing
state of the person (rather than an event, a question or small talk)? Each question is a linear
classifier (ridge regression) over the embedder's own vectors, fitted on the labelled sentences below,
which are about everyday topics and are written in English and Chinese. The examples name *kinds of
sentence*, not domains: held-out queries and memories of other topics are classified by the same
weights (docs/benchmark-log.md reports the held-out rates). The third question serves recall-time updates
(supersede.py): a newer memory replaces an older one only if it states a change ("moved to", "改到"),
not when it merely says more on the same topic. The fourth keeps small talk out of recall
(pipeline.py): "Thanks, bye!" must never be injected, while a short answer ("Hill", "绵阳", "H3-215")
must, so short answers are among its counter-examples. The fifth serves the floor (pipeline.py): a
question about the asker ("What's my trade?", "我是做什么的？") can only be answered from their memory, so
it anchors on weaker evidence, as a history cue does, while general and how-to questions phrased with
"I" or "my" ("How do I reset my router?") are its counter-examples. The sixth serves it too: a bare answer
(the short answers, ``SHORT_CONTENT``, against the statements that stand alone) says almost nothing of the
question it answers, so it takes the evidence of that question (``corpus.Corpus.prompting_turn``); it was a
count of keyword terms (at most 2, fitted), which lent a two-word remark a question's evidence and not a
three-word answer ("Yes, two cats.").

The two query kinds let memories past the relevance floor by kind alone (a request is offered standing
facts, a question about the asker that nothing answers is offered one), so such an offer is made only
above the score the classifier gives the examples it was not fitted on: each counter-example is scored
by the fit on all the others (leave-one-out), and the highest such score is the margin a query must
exceed (never below the classifier's own boundary, 0). An embedder that tells the kinds apart has no
counter-example above 0 (multilingual-e5-small's request margin is 0); an English-only one that scores
"谢谢，很有帮助！" as a request gets the margin that rejects it, and with it every query it is as unsure of.
The standing classifier has its margin too: a Chinese statement that names no one is the speaker's own
standing fact only past it (``profile.said_of_self``), since its dropped subject may be the topic before;
and the content-free one: a question is small talk only past it ("How are you?"), as the classifier
learned small talk from statements.
Questions about the asker include those that name no "my" ("When does the renovation finish?", "考试还有
几天？"): the asker's own plans, named as the person would name them. Their general twins ("How long does
a kitchen renovation usually take?") sit close to them, and left out, one scores 0.16 with e5: such a
question anchors on weaker evidence from 0 up, and is offered a standing fact only above 0.16.

The weights for the default embedder ship with the package (``SHIPPED``); for any other embedder they are
fitted on first use and kept for the process."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hindsight_core.embeddings.base import Embedder

#: Requests: the asker wants something chosen, planned, written or suggested for them.
REQUESTS: tuple[str, ...] = (
    "Recommend a good book for my flight.",
    "Suggest a gift for my dad's birthday.",
    "Help me plan a weekend in Kyoto.",
    "What should I cook for dinner tonight?",
    "Can you find me a hotel near the station?",
    "Write a packing list for a camping trip.",
    "Which laptop should I buy for programming?",
    "Give me some ideas for a date night.",
    "Plan my meals for next week.",
    "Pick a movie for us to watch on Friday.",
    "Suggest a podcast for my commute.",
    "Could you draft an itinerary for three days in Rome?",
    "What shoes should I get for the office?",
    "Recommend a board game for a family evening.",
    "Help me choose a paint colour for the bedroom.",
    "Find a weekend hobby that would suit me.",
    "Can you suggest a lunch I can bring to work?",
    "Put together a reading list for the summer.",
    "Choose a wine to go with the roast.",
    "Suggest a present for my niece, she turns six.",
    "Help me pick a phone plan.",
    "What should I pack for a business trip to Oslo?",
    "Recommend some music for studying.",
    "Plan a picnic for Sunday afternoon.",
    "Could you recommend a mattress?",
    "Suggest an activity for a rainy day.",
    "推荐一部周末看的电影。",
    "帮我安排一下明天的行程。",
    "给我爸挑个生日礼物。",
    "帮我写一份露营的装备清单。",
    "晚饭做什么好？",
    "推荐一款适合编程的笔记本电脑。",
    "帮我规划一下下周的菜单。",
    "给我推荐几本适合在飞机上看的书。",
    "帮我选一个卧室的墙面颜色。",
    "推荐一个适合全家玩的桌游。",
    "帮我找一家火车站附近的酒店。",
    "周末有什么好玩的活动推荐吗？",
    "给我推荐几个通勤时听的播客。",
    "帮我做一个三天的东京旅行计划。",
    "帮我挑一双上班穿的鞋。",
    "推荐一些适合学习时听的音乐。",
    "下雨天在家可以做点什么？给点建议。",
    "帮我准备一个周日野餐的方案。",
    "推荐一款适合送给侄女的礼物。",
    "帮我选个手机套餐。",
    "出差去奥斯陆要带些什么？",
    "给我推荐一个周末爱好。",
    # a remedy chosen for the asker's symptom: what they can take depends on what they cannot
    "My throat is sore, what can I take for it?",
    "Got a cold, which medicine should I take?",
    "胃不舒服，能吃点什么？",
)

#: Not requests: questions of fact, questions about what happened, statements, small talk.
NOT_REQUESTS: tuple[str, ...] = (
    "What is the capital of Australia?",
    "How does photosynthesis work?",
    "When did the Berlin Wall fall?",
    "What did I tell you about my sister last week?",
    "When did I last visit the dentist?",
    "Who won the match yesterday?",
    "How many bones are in the human body?",
    "Why is the sky blue?",
    "What time did the meeting start on Monday?",
    "Where did we go for the anniversary?",
    "What is the speed of light?",
    "Did I mention my brother's new job?",
    "How long is the Great Wall?",
    "What year was the company founded?",
    "I went to the market yesterday.",
    "Thanks, that was helpful!",
    "The printer on the second floor is broken again.",
    "We finished the quarterly report this morning.",
    "Okay, sounds good.",
    "What does the word serendipity mean?",
    "Who wrote Pride and Prejudice?",
    "What did Anna say about the trip?",
    "How old was I when we moved?",
    "Which team did I say I support?",
    "What is the melting point of iron?",
    "What happened at the conference?",
    "中国的首都是哪里？",
    "光合作用是怎么回事？",
    "柏林墙是哪一年倒的？",
    "我上周跟你说过我姐姐什么事？",
    "我上次去看牙医是什么时候？",
    "昨天的比赛谁赢了？",
    "人体有多少块骨头？",
    "天空为什么是蓝色的？",
    "周一的会几点开始的？",
    "我们结婚纪念日去了哪里？",
    "我昨天去超市买了点水果。",
    "谢谢，很有帮助！",
    "今天上午开了个会。",
    "好的，没问题。",
    "这个成语是什么意思？",
    "《红楼梦》的作者是谁？",
    "小王说旅行的事怎么样了？",
    "我们搬家的时候我几岁？",
    "铁的熔点是多少？",
    "会议上发生了什么？",
    "我说过我支持哪个球队吗？",
    "公司是哪一年成立的？",
    "How do I reset a modem to factory settings?",
    "How do I convert a PDF to a Word document?",
    "How do you set up SSH keys on Linux?",
    "How do I merge two branches in git?",
    "How does a mortgage amortisation schedule work?",
    "What command lists open ports on a server?",
    "怎么给自行车补胎？",
    "如何在Excel里做数据透视表？",
    "怎么查看电脑的IP地址？",
    "Linux下怎么配置SSH免密登录？",
    "怎么把PDF转成Word？",
    "房贷的等额本息是怎么算的？",
    "weather in Paris",
    "jazz clubs in Chicago",
    "history of the Roman empire",
    "peanut butter",
    "Lisbon trip",
    "上海的天气",
    "罗马帝国的历史",
    "北京的博物馆",
    "What is ibuprofen used for?",
    "How do antibiotics work?",
    "布洛芬是干什么用的？",
    "抗生素是怎么起作用的？",
)

#: A person's standing states: conditions, constraints, habits, preferences, circumstances that last.
STANDING: tuple[str, ...] = (
    "I'm allergic to shellfish.",
    "I don't drink coffee at all.",
    "I have asthma.",
    "I prefer window seats on planes.",
    "I can't stand loud music.",
    "I have two kids, aged four and seven.",
    "I'm training for a marathon this year.",
    "I work from home on Fridays.",
    "I'm on a tight budget these days.",
    "I don't have a driver's license.",
    "I'm short-sighted and wear glasses.",
    "I hate cilantro.",
    "I get migraines from bright screens.",
    "I'm a light sleeper.",
    "I use a standing desk because of my back.",
    "I only read books in paper, never e-books.",
    "My partner is pregnant.",
    "I live on the fifth floor without a lift.",
    "I'm deaf in my left ear.",
    "I get seasick easily.",
    "I follow a low-sodium diet.",
    "I'm learning Spanish.",
    "I love spicy food.",
    "I am a nurse and work rotating shifts.",
    "I'm colour-blind.",
    "I have a bad back.",
    "我不喝咖啡。",
    "我有哮喘。",
    "我对海鲜过敏。",
    "我不会游泳。",
    "我特别怕冷。",
    "我住在五楼，没有电梯。",
    "我在减肥，晚上不吃主食。",
    "我是夜猫子，一般凌晨才睡。",
    "我近视，度数挺高的。",
    "我不喜欢太吵的地方。",
    "我家有两个孩子，一个四岁一个七岁。",
    "我每周五在家办公。",
    "我最近手头比较紧。",
    "我没有驾照。",
    "我很讨厌香菜。",
    "我一看屏幕久了就偏头痛。",
    "我睡眠很浅。",
    "我腰不好，不能久坐。",
    "我老婆怀孕了。",
    "我左耳听力不好。",
    "我坐船容易晕。",
    "我在学西班牙语。",
    "我是护士，经常倒班。",
    "我吃饭口味很重。",
    "我只看纸质书。",
    "我是色弱。",
    "I teach maths at a high school.",
    "I commute by bike every day.",
    "I drive an electric car.",
    "I can't cook at all.",
    "I get up at five every morning.",
    "I live alone with my dog.",
    "I'm retired.",
    "I mostly work weekends at the shop.",
    "我在一家超市上班，周末也要值班。",
    "我每天骑车通勤。",
    "我用的是安卓手机。",
    "我不会做饭。",
    "我每天早上五点起床。",
    "我一个人住，养了条狗。",
    "我已经退休了。",
    # who the person is: name, trade and town, said when introducing themselves
    "I'm Priya, I work as an accountant in Leicester.",
    "I live in Valencia with my husband.",
    "I run a small bike repair shop.",
    "I'm a software engineer at a bank.",
    "我叫陈静，在苏州做会计。",
    "我住在洛阳老城区。",
    "我自己开了一家理发店。",
    "我是做外贸的，经常出差。",
    # a standing state said in passing, after the news of the day
    "Long day at the clinic; I'm a physiotherapist there.",
    "Just back from the site, I'm a structural engineer.",
    "Busy week again, I teach piano to kids after school.",
    "Quick note before I forget: I'm diabetic.",
    "刚下夜班，我是急诊科的医生。",
    "今天又加班了，我在一家律所做助理。",
    "顺便说一句，我是素食者。",
)

#: Not standing states: one-off events, questions, requests, small talk, other people's news.
NOT_STANDING: tuple[str, ...] = (
    "I went to the dentist this morning.",
    "I watched a movie last night.",
    "I bought a new umbrella yesterday.",
    "We had a meeting about the budget.",
    "Can you explain how tides work?",
    "Thanks, that helps!",
    "The printer on the second floor is broken again.",
    "I just finished a novel.",
    "I called my mother on Sunday.",
    "I cleaned the kitchen today.",
    "It rained all afternoon.",
    "I took the bus to work today.",
    "My colleague sent me a funny video.",
    "What's the weather like tomorrow?",
    "I forgot my keys at the office this morning.",
    "We played cards after dinner.",
    "Interest is added to the principal each month.",
    "Practice for fifteen minutes a day.",
    "I had a sandwich for lunch.",
    "Recommend a good book for my flight.",
    "I met an old friend at the station.",
    "I sent the invoice this afternoon.",
    "The train was late again.",
    "Sounds great, see you then.",
    "我今天早上去看了牙医。",
    "我昨晚看了一部电影。",
    "我昨天买了一把新伞。",
    "今天上午开了一个关于预算的会。",
    "潮汐是怎么形成的？",
    "谢谢，很有用！",
    "二楼的打印机又坏了。",
    "我刚看完一本小说。",
    "周日我给妈妈打了个电话。",
    "我今天把厨房打扫了一遍。",
    "下午一直在下雨。",
    "我今天坐公交上的班。",
    "同事给我发了个搞笑视频。",
    "明天天气怎么样？",
    "我今早把钥匙忘在办公室了。",
    "晚饭后我们打了会儿牌。",
    "利息会计入本金。",
    "每天练十五分钟就行。",
    "我中午吃了个三明治。",
    "给我推荐一本书。",
    "我在车站碰到了一个老朋友。",
    "下午我把发票寄出去了。",
    "火车又晚点了。",
    "好的，到时候见。",
    "I picked up the dry cleaning after work.",
    "We drove to the coast on Saturday.",
    "I tried a new café downtown today.",
    "The package arrived an hour ago.",
    "I stayed late at the office yesterday to finish slides.",
    "My friend called me this evening.",
    "我下班后去取了干洗的衣服。",
    "周六我们开车去了海边。",
    "我今天去市中心试了一家新咖啡馆。",
    "快递一个小时前到了。",
    "昨天我在公司加班做幻灯片。",
    "朋友今晚给我打了电话。",
    "Just got back from a long run and had a shower.",
    "Busy day again; I answered emails until seven.",
    "刚下班，顺路买了点菜。",
)


#: Changes: a statement that something the speaker had or did before now has another value.
CHANGES: tuple[str, ...] = (
    "I switched my bank to a local credit union.",
    "We moved the standup to 9:30.",
    "My rent went up to 1,400 a month.",
    "I changed my email address to the new one.",
    "The dentist appointment was moved to Thursday.",
    "I've upgraded my plan to the premium tier.",
    "My daughter changed schools this term.",
    "I sold my bike and got a scooter instead.",
    "We replaced the old fridge with a new one.",
    "I quit coffee, I drink tea now.",
    "The flight got rescheduled to 7 am.",
    "Our office relocated to the fifth floor.",
    "I'm no longer a vegetarian.",
    "I go swimming on Mondays now instead of Fridays.",
    "The deadline has been extended to the end of the month.",
    "We've dropped Jira and use Linear now.",
    "My gym membership is now 45 a month, it used to be 30.",
    "I cut my hair short last week.",
    "我把银行卡换成了招商银行的。",
    "站会改到九点半了。",
    "房租涨到每月四千了。",
    "我换了新的邮箱地址。",
    "牙医预约改到周四了。",
    "我已经升级到高级会员了。",
    "女儿这学期转学了。",
    "我把自行车卖了，换了辆电动车。",
    "我戒了咖啡，现在只喝茶。",
    "航班改签到早上七点了。",
    "我们办公室搬到五楼了。",
    "我现在不吃素了。",
    "截止日期延后到月底了。",
    "我们不用钉钉了，改用飞书。",
    "健身卡涨到一个月三百了，以前是两百。",
    # a change followed by its reason or an aside, the way people say it in passing
    "We relocated to Denver in the spring, closer to my parents.",
    "They bumped our renovation budget up to 60k, the roof needs work.",
    "We trimmed the holiday budget to 2,000, money's tight this year.",
    "The conference got pushed back to November 12, the venue was double-booked.",
    "I left the bank and joined a startup as a data analyst.",
    "I take the train to work now instead of driving, parking got too expensive.",
    "我们去年搬到苏州了，孩子在这边上学。",
    "我年初搬去深圳了，公司在那边。",
    "装修预算提到二十万了，厨房要重做。",
    "旅游预算砍到八千了，今年手头紧。",
    "婚礼推迟到明年五月了，场地没订到。",
    "我辞职了，现在在一家游戏公司做策划。",
    "我现在改成坐地铁上班了，不开车了。",
    "After talking it over with my wife, we pushed the move to June.",
    "和家里人商量了一下，婚期改到十月了。",
)

#: Not changes: statements that add to what was said or stand on their own (with ``STANDING`` and
#: ``NOT_STANDING``, which hold no change either).
NOT_CHANGES: tuple[str, ...] = (
    "I also started doing yoga on Tuesdays.",
    "My sister has a cat too.",
    "We also use Slack for chat.",
    "Besides tennis, I like to swim.",
    "The meeting is at 10 am.",
    "Our team has five engineers.",
    "My favourite film is Alien.",
    "I went hiking with my brother last weekend.",
    "I'm thinking about learning the piano.",
    "My friend just adopted a puppy.",
    "我还开始练瑜伽了，每周二。",
    "我姐姐也养了一只猫。",
    "除了网球，我还喜欢游泳。",
    "会议在上午十点。",
    "我们组有五个工程师。",
    "我最喜欢的电影是《异形》。",
    "上周末我和哥哥去爬山了。",
    "我在考虑学钢琴。",
    "我朋友刚领养了一只小狗。",
    # the same topics without a change: a trip, a plan, where others live, what else is needed
    "We spent the weekend in Suzhou, the gardens were lovely.",
    "The renovation will probably take three months.",
    "My parents live near the coast.",
    "The kitchen needs new cabinets as well.",
    "我们周末去苏州玩了，园林很美。",
    "装修大概要三个月。",
    "我爸妈住在海边。",
    "厨房还得换新的橱柜。",
    # news, plans and feelings told with an aside, the way people say them in passing
    "I went to a pottery class yesterday and it was so relaxing.",
    "We're putting together a bake sale next month, the kids are really excited.",
    "Thanks for the support, it means a lot to me right now.",
    "It's been a busy week since we talked, work has been crazy.",
    "I've been reading a lot about gardening lately, it keeps me calm.",
    "My brother started a small bakery and it's doing really well.",
    "我昨天去上了陶艺课，特别放松。",
    "下个月我们要办个义卖，孩子们都很期待。",
    "谢谢你的支持，这对我来说很重要。",
    "上次聊完这周一直很忙，工作太多了。",
    "最近在看很多园艺的书，能让我静下心来。",
    "我哥开了家小面包店，生意还不错。",
)


#: Content-free turns: acknowledgements, thanks, greetings, farewells, laughter and pleasantries, the
#: turns a conversation needs and a prompt never does. Judged by meaning, so any wording of these acts
#: counts, in either language.
CONTENT_FREE: tuple[str, ...] = (
    "ok",
    "Okay!",
    "k thx",
    "Thanks a lot!",
    "Thank you, that's great.",
    "Cheers mate",
    "Got it.",
    "Understood.",
    "Sounds good!",
    "Perfect, thanks!",
    "Great, thank you!",
    "Cool cool",
    "haha",
    "lmao",
    "hehe nice",
    "Nice one!",
    "Hi there!",
    "Hello!",
    "Hey, how's it going?",
    "Good morning!",
    "Bye!",
    "Talk to you later.",
    "See you tomorrow!",
    "Catch you later!",
    "See you on Monday then.",
    "Goodnight!",
    "Take care!",
    "You're welcome!",
    "No problem at all.",
    "My pleasure, happy to help!",
    "Glad I could help.",
    "Have a great day!",
    "Enjoy!",
    "Good luck!",
    "Fair enough.",
    "Right, makes sense.",
    "Yep.",
    "Sure.",
    "Awesome!",
    "I see.",
    "Oh wow.",
    "Hmm okay",
    "Will do!",
    "Appreciate it!",
    "What can I do for you?",
    "Hi! What can I help you with?",
    "Anything else I can help with?",
    "Good luck with the interview!",
    "Hope the wedding goes great!",
    "Have a safe flight!",
    "okie dokie",
    "oki",
    "okey",
    "kk",
    "okayyy",
    "mhm",
    "yup yup",
    "ta",
    "Congrats!",
    "Hey, welcome back!",
    "you there?",
    "Anyone around?",
    "Thanks, that was helpful!",
    "Okay, sounds good.",
    "Thanks, that helps!",
    "Sounds great, see you then.",
    "好的",
    "好的好的",
    "收到",
    "嗯嗯",
    "嗯",
    "哈哈哈",
    "谢谢！",
    "谢谢你啦",
    "多谢",
    "太好了，谢谢！",
    "没问题",
    "知道了",
    "懂了",
    "行",
    "可以可以",
    "你好！",
    "在吗？",
    "人呢？还在吗",
    "在？",
    "有人吗？",
    "在不？",
    "早上好！",
    "晚安",
    "拜拜",
    "再见！",
    "回头聊",
    "不客气！",
    "应该的，随时找我。",
    "祝你玩得开心！",
    "加油！",
    "辛苦了",
    "哇，厉害",
    "原来如此",
    "好滴",
    "有什么可以帮你的吗？",
    "您好，请问需要什么帮助？",
    "还有别的需要吗？",
    "祝考试顺利！",
    "祝面试顺利！",
    "祝你一切顺利！",
    "祝旅途愉快！",
    "恭喜恭喜！",
    "欢迎回来！",
    "谢谢，很有帮助！",
    "好的，没问题。",
    "谢谢，很有用！",
)

#: Short turns that carry content: an answer, a name, a place, a number, a code. A reply is measured
#: with what it answers, so it must not read as small talk for being short.
SHORT_CONTENT: tuple[str, ...] = (
    "Goodnight Moon",
    "Bye Bye Birdie",
    "Thank You, Next",
    "Hi-Fi Rush",
    "《你好，李焕英》",
    "Kowalski.",
    "Nakamura",
    "Okafor",
    "Lyon",
    "Gdańsk.",
    "Thursdays",
    "Vegan.",
    "Hernández",
    "Fitzgerald",
    "Leeds",
    "张",
    "苏州",
    "周四",
    "Porto.",
    "Room 412.",
    "B7-113",
    "About 700 euros.",
    "Tuesday at 3.",
    "Two kids, 5 and 8.",
    "Gluten.",
    "A golden retriever.",
    "Blue, always blue.",
    "Third floor, no lift.",
    "Seat 14C.",
    "My sister, Inês.",
    "Python and Go.",
    "In March.",
    "Mostly night shifts.",
    "Penicillin.",
    "Flight TP 1352.",
    "成都",
    "王建国",
    "三楼",
    "两个孩子",
    "八百块左右",
    "下周三",
    "青霉素",
    "一只柯基",
    "A座1203",
    "夜班",
    "地铁二号线",
    "海鲜过敏",
    "Got it, no dairy.",
    "OK, window seat then.",
    "Noted: the deadline is Friday.",
    "She reads lips quite well.",
    "He works nights too.",
    "It's about two hours by train.",
    "Keep the receipt and it's fine.",
    "Sitting near the front will help.",
    "好的，不要洋葱，记住了。",
    "好的，周五前交。",
    "提前预约就可以。",
    "他也会手语。",
    "那就好，我以为要排很久。",
    "坐前排会好一些。",
    "It means acting before it is too late.",
    "A quick estimate from rough numbers.",
    "意思是坏事也可能变成好事。",
    "一种用来估算的粗略方法。",
    # a yes or a no that goes on to say what
    "Yes, a daughter and a son.",
    "No, only on weekends.",
    "对，一个女儿。",
    "不是，在周末。",
)


#: Questions about the asker: what they want to know is a fact of their own life (their work, home,
#: family, health, plans, what they said before), so the answer can only be in their memory. Written
#: apart from any evaluation set; how-to and general questions phrased with "I" or "my" are counter-examples.
ABOUT_ASKER: tuple[str, ...] = (
    "What do I do for a living?",
    "Where am I based these days?",
    "What's my wife called?",
    "How old are my kids?",
    "Which languages can I speak?",
    "Do I have any health conditions?",
    "What's my dog's name?",
    "Who is my manager?",
    "What car do I own?",
    "Which team do I coach?",
    "What kind of food do I like best?",
    "Am I vegetarian?",
    "How much was I planning to spend on the holiday?",
    "When is my daughter's birthday?",
    "What instrument do I play?",
    "Where did I grow up?",
    "What does my brother do?",
    "What time do I usually start work?",
    "Is there anything I can't eat?",
    "What did I say my deadline was?",
    "Which gym do I go to?",
    "What's my partner's name?",
    "我的职业是什么？",
    "我现在住在哪儿？",
    "我老婆叫什么名字？",
    "我家孩子多大了？",
    "我会说哪几种语言？",
    "我有什么慢性病吗？",
    "我家狗叫什么？",
    "我的领导是谁？",
    "我开的是什么车？",
    "我老家是哪里的？",
    "我喜欢吃什么菜？",
    "我吃素吗？",
    "这次旅行我打算花多少钱？",
    "我女儿生日是哪天？",
    "我会弹什么乐器？",
    "我在哪家公司上班？",
    "我姐姐在哪个城市？",
    "我每天几点上班？",
    "我爸的身体状况如何？",
    "我有没有什么忌口？",
    # the asker's own plans and situation, named without "my": "the move", "the exam", "this trip"
    "When does the renovation finish?",
    "How much is left in the holiday fund?",
    "What time is the appointment on Friday?",
    "How many days until the exam?",
    "Which hotel did we settle on?",
    "What's the rent on the new flat?",
    "How many guests are coming to the party?",
    "My knee is swollen again, which painkiller is fine for me?",
    "这次装修一共能花多少？",
    "考试还有几天？",
    "新公司在哪个区？",
    "婚礼请了多少人？",
    "体检报告上怎么说的？",
    "腰又疼了，我能吃什么止疼药？",
)

#: Questions whose answer is general knowledge, or how-to help with something of the asker's.
NOT_ABOUT_ASKER: tuple[str, ...] = (
    "What is the capital of Canada?",
    "How does a heat pump work?",
    "When did the Roman empire fall?",
    "How many legs does a spider have?",
    "Why is the sea salty?",
    "What is 12 times 17?",
    "Who painted The Night Watch?",
    "What does the word ubiquitous mean?",
    "How do I reset my router?",
    "How can I make my sourdough rise more?",
    "Why does my laptop fan keep spinning?",
    "How do I renew my passport?",
    "How do I centre a div in CSS?",
    "How do I sort a list in Python?",
    "What's the boiling point of water at altitude?",
    "How far is the Moon?",
    "Who invented the telephone?",
    "What is the tallest mountain in Africa?",
    "How do I get red wine out of my carpet?",
    "What's a good way to learn chess?",
    "What's 20 percent of 350?",
    "How do vaccines work?",
    "日本的首都是哪里？",
    "热泵是怎么工作的？",
    "唐朝是哪一年灭亡的？",
    "蜘蛛有几条腿？",
    "海水为什么是咸的？",
    "十二乘以十七等于多少？",
    "《蒙娜丽莎》是谁画的？",
    "这个词是什么意思？",
    "我的路由器怎么重置？",
    "我的电脑开机很慢怎么办？",
    "护照过期了怎么续签？",
    "Python里怎么给列表排序？",
    "月球离地球有多远？",
    "电话是谁发明的？",
    "非洲最高的山是哪座？",
    "衣服上的红酒渍怎么洗掉？",
    "疫苗是怎么起作用的？",
    "三百五的百分之二十是多少？",
    "怎么学好下象棋？",
    "高原上水的沸点是多少？",
    # general questions on the same everyday topics, which anyone could answer
    "How long does a kitchen renovation usually take?",
    "How many days are there in a leap year?",
    "What's left of 500 after spending 120?",
    "How long does a visa application take?",
    "Which painkillers are anti-inflammatory?",
    "高铁一般提前多久检票？",
    "一年有多少个星期？",
    "消炎药一般要吃几天？",
    "五千减去一千二还剩多少？",
)


@dataclass(frozen=True)
class SentenceKinds:
    """The classifiers for one embedder: ``request(query_vector)``, ``about_asker(query_vector)``,
    ``standing(vectors)``, ``change(vectors)`` and ``content_free(vectors)`` return a signed score
    (positive: of the kind); ``is_request`` also asks the query to clear the held-out margin."""

    request_weights: np.ndarray
    request_bias: float
    standing_weights: np.ndarray
    standing_bias: float
    change_weights: np.ndarray
    change_bias: float
    content_free_weights: np.ndarray
    content_free_bias: float
    about_asker_weights: np.ndarray
    about_asker_bias: float
    answer_weights: np.ndarray
    answer_bias: float
    #: The highest score a held-out counter-example of the kind got (at least 0): see the module's docstring.
    request_margin: float
    about_asker_margin: float
    #: The same for the standing classifier: a statement that names no one ("最近膝盖受伤了…") is the
    #: speaker's own standing fact only past it (``profile.said_of_self``).
    standing_margin: float
    #: And for the content-free classifier: a question is small talk only past it ("How are you?", not
    #: "Do I work in healthcare?"; ``RecallPipeline._small_talk``).
    content_free_margin: float
    #: The most keyword terms an example of small talk has (``CONTENT_FREE``, ``content_free_max_terms``):
    #: the content-free classifier's verdict is trusted on turns no longer than what it learned from.
    content_free_max_terms: int

    def request(self, query_vector: np.ndarray) -> float:
        return float(query_vector @ self.request_weights + self.request_bias)

    def about_asker(self, query_vector: np.ndarray) -> float:
        return float(query_vector @ self.about_asker_weights + self.about_asker_bias)

    def is_request(self, query_vector: np.ndarray) -> bool:
        return self.request(query_vector) > self.request_margin

    def standing(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors @ self.standing_weights + self.standing_bias, dtype=np.float32)

    def change(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors @ self.change_weights + self.change_bias, dtype=np.float32)

    def content_free(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors @ self.content_free_weights + self.content_free_bias, dtype=np.float32)

    def answer(self, vectors: np.ndarray) -> np.ndarray:
        """Positive for a bare answer ("Hill", "Yes, two cats.", "The one near the station."): a turn
        understood only with the question it answers, not a statement that stands alone."""
        return np.asarray(vectors @ self.answer_weights + self.answer_bias, dtype=np.float32)


def _examples(positive: np.ndarray, negative: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(centred vectors, their mean, targets +1 / -1)`` of a classifier's labelled examples."""
    x = np.vstack([positive, negative]).astype(np.float64)
    mean = x.mean(axis=0)
    return x - mean, mean, np.concatenate([np.ones(len(positive)), -np.ones(len(negative))])


def _ridge(positive: np.ndarray, negative: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Least squares to +1 / -1 with an L2 penalty, on centred vectors (the bias is not penalised)."""
    centred, mean, y = _examples(positive, negative)
    weights = np.linalg.solve(centred.T @ centred + alpha * np.eye(centred.shape[1]), centred.T @ (y - y.mean()))
    return weights.astype(np.float32), float(y.mean() - mean @ weights)


def held_out_margin(positive: np.ndarray, negative: np.ndarray, alpha: float) -> float:
    """The highest score ``_ridge`` gives a negative example when fitted on all the other examples, or 0.

    Closed form: for ridge regression with an unpenalised intercept, the prediction for example ``i``
    without it is ``y_i - r_i / (1 - h_ii)``, with ``r`` the residuals and ``h`` the hat matrix
    ``1/n + K (K + alpha I)^-1`` of the centred Gram matrix ``K``: one n-by-n solve, not n fits."""
    centred, _, y = _examples(positive, negative)
    gram = centred @ centred.T
    hat = 1.0 / len(y) + np.linalg.solve(gram + alpha * np.eye(len(y)), gram).T
    held_out = y - (y - hat @ y) / (1.0 - np.diag(hat))
    return max(0.0, float(held_out[len(positive):].max()))


def fit(embedder: Embedder, alpha: float) -> SentenceKinds:
    """Fit the classifiers on the labelled sentences, as the embedder sees them (queries as queries,
    memories as documents)."""
    queries = np.stack([embedder.embed_query(t) for t in (*REQUESTS, *NOT_REQUESTS)])
    documents = embedder.embed_documents([*STANDING, *NOT_STANDING, *CHANGES, *NOT_CHANGES])
    standing, statements = len(STANDING), len(STANDING) + len(NOT_STANDING)
    changes = documents[statements: statements + len(CHANGES)]
    # content-free against every other example as the memory it would be stored as: statements, questions,
    # requests and short answers (the small talk among the other kinds' examples is content-free too)
    free = embedder.embed_documents(list(CONTENT_FREE))
    content = embedder.embed_documents(
        [t for t in dict.fromkeys((*STANDING, *NOT_STANDING, *CHANGES, *NOT_CHANGES, *REQUESTS, *NOT_REQUESTS,
                                   *SHORT_CONTENT)) if t not in CONTENT_FREE])
    request_w, request_b = _ridge(queries[: len(REQUESTS)], queries[len(REQUESTS):], alpha)
    standing_w, standing_b = _ridge(documents[:standing], documents[standing:statements], alpha)
    change_w, change_b = _ridge(changes, np.vstack([documents[:statements], documents[statements + len(CHANGES):]]),
                                alpha)
    free_w, free_b = _ridge(free, content, alpha)
    asker = np.stack([embedder.embed_query(t) for t in (*ABOUT_ASKER, *NOT_ABOUT_ASKER)])
    asker_w, asker_b = _ridge(asker[: len(ABOUT_ASKER)], asker[len(ABOUT_ASKER):], alpha)
    answer_w, answer_b = _ridge(*_answers(embedder), alpha)
    return SentenceKinds(request_w, request_b, standing_w, standing_b, change_w, change_b, free_w, free_b,
                         asker_w, asker_b, answer_w, answer_b,
                         held_out_margin(queries[: len(REQUESTS)], queries[len(REQUESTS):], alpha),
                         held_out_margin(asker[: len(ABOUT_ASKER)], asker[len(ABOUT_ASKER):], alpha),
                         held_out_margin(documents[:standing], documents[standing:statements], alpha),
                         held_out_margin(free, content, alpha), content_free_max_terms())


def _answers(embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
    """Bare answers (``SHORT_CONTENT``: a name, a number, "Yes, two cats.", "He works nights too.") against
    statements that stand alone (the standing, other and change examples), as stored memories."""
    statements = [t for t in dict.fromkeys((*STANDING, *NOT_STANDING, *CHANGES, *NOT_CHANGES))
                  if t not in SHORT_CONTENT and t not in CONTENT_FREE]
    return embedder.embed_documents(list(SHORT_CONTENT)), embedder.embed_documents(statements)


def content_free_max_terms() -> int:
    """The most keyword terms (``keyword.tokenize``, as the keyword index counts them) of an example of
    small talk: 4 ("Hope the wedding goes great!", "祝你一切顺利！").

    The classifier has seen small talk only up to that length. A longer turn it flags mostly goes on to say
    something ("Thanks! The support group was amazing."): on LoCoMo 1,195 of 2,760 turns score as small
    talk, and leaving all of them out cost recall@10 0.18. So a flagged turn is left out of recall only
    within the lengths the classifier learned from. This was the fitted ``recall.content_free_terms`` (3);
    at 4 the behaviour set (both embedders), LoCoMo and LongMemEval pass the same questions, and "Lovely
    city! How's the move going?" is no longer injected beside the move (docs/benchmark-log.md).

    The count depends on the examples alone, not on the embedder: it is read from the shipped file while
    the examples are those it was written for, so no process segments the Chinese examples (loading
    jieba's dictionary, about a second) for it."""
    try:
        saved = json.loads(SHIPPED.read_text(encoding="utf-8"))
        if saved["digest"] == examples_digest():
            return int(saved["content_free_max_terms"])
    except (FileNotFoundError, KeyError):
        pass
    from hindsight_core.recall.keyword import tokenize

    return max(len(set(tokenize(text))) for text in CONTENT_FREE)


#: Weights fitted for the default embedder, shipped so that a process does not embed the examples
#: before its first recall (2-7 s on two cores). Written by ``python -m hindsight_core.recall.sentence_kinds``;
#: used only while the examples and ``ALPHA`` are those they were fitted on (``examples_digest``).
SHIPPED = Path(__file__).with_name("sentence_kinds.json")
ALPHA = 0.1

_fitted: dict[tuple[str, int], SentenceKinds] = {}
_lock = threading.Lock()


def examples_digest() -> str:
    """Identifies the labelled examples and the penalty the weights were fitted with."""
    text = json.dumps([REQUESTS, NOT_REQUESTS, STANDING, NOT_STANDING, CHANGES, NOT_CHANGES, CONTENT_FREE,
                       SHORT_CONTENT, ABOUT_ASKER, NOT_ABOUT_ASKER, ALPHA],
                      ensure_ascii=False)
    return hashlib.sha1(text.encode()).hexdigest()


def shipped(embedder: Embedder) -> SentenceKinds | None:
    """The shipped weights, when they were fitted on this embedder and on today's examples."""
    try:
        saved = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if (saved["embedder"], saved["dim"], saved["digest"]) != (embedder.name, embedder.dim, examples_digest()):
        return None
    def weights(kind: str) -> np.ndarray:
        return np.asarray(saved[f"{kind}_weights"], dtype=np.float32)

    return SentenceKinds(weights("request"), float(saved["request_bias"]), weights("standing"),
                         float(saved["standing_bias"]), weights("change"), float(saved["change_bias"]),
                         weights("content_free"), float(saved["content_free_bias"]),
                         weights("about_asker"), float(saved["about_asker_bias"]),
                         weights("answer"), float(saved["answer_bias"]),
                         float(saved["request_margin"]), float(saved["about_asker_margin"]),
                         float(saved["standing_margin"]), float(saved["content_free_margin"]),
                         int(saved["content_free_max_terms"]))


def for_embedder(embedder: Embedder) -> SentenceKinds:
    """The classifiers for this embedder's vector space: shipped, or fitted once per process."""
    key = (embedder.name, embedder.dim)
    with _lock:
        kinds = _fitted.get(key)
        if kinds is None:
            kinds = _fitted[key] = shipped(embedder) or fit(embedder, ALPHA)
        return kinds


def save(embedder: Embedder, path: Path = SHIPPED) -> SentenceKinds:
    kinds = fit(embedder, ALPHA)
    saved: dict[str, object] = {"embedder": embedder.name, "dim": embedder.dim, "digest": examples_digest()}
    for kind in ("request", "standing", "change", "content_free", "about_asker", "answer"):
        saved[f"{kind}_weights"] = [round(float(v), 7) for v in getattr(kinds, f"{kind}_weights")]
        saved[f"{kind}_bias"] = getattr(kinds, f"{kind}_bias")
    saved["request_margin"], saved["about_asker_margin"] = kinds.request_margin, kinds.about_asker_margin
    saved["standing_margin"], saved["content_free_margin"] = kinds.standing_margin, kinds.content_free_margin
    saved["content_free_max_terms"] = kinds.content_free_max_terms  # read without segmenting Chinese (jieba)
    path.write_text(json.dumps(saved) + "\n", encoding="utf-8")
    return kinds


if __name__ == "__main__":  # refit the shipped weights after the examples change
    from hindsight_core.embeddings.e5 import E5Embedder

    save(E5Embedder())
    print(f"wrote {SHIPPED}")
