"""Word lists of the offline extractor (``extractor.py``): data only.

Words other code shares (stop words, question words, words that are not names) live in
``agent_memory.lexicon``.
"""

from __future__ import annotations

DEMONYMS = frozenset(
    "American British English Scottish Welsh Irish Canadian Australian German French Spanish Italian "
    "Portuguese Dutch Belgian Swiss Austrian Swedish Norwegian Danish Finnish Icelandic Polish Czech "
    "Slovak Hungarian Romanian Bulgarian Greek Turkish Russian Ukrainian Chinese Japanese Korean Indian "
    "Pakistani Bangladeshi Brazilian Mexican Argentinian Argentine Chilean Colombian Peruvian Nigerian "
    "Kenyan Egyptian Moroccan Israeli Iranian Vietnamese Thai Filipino Indonesian Malaysian Singaporean "
    "Estonian Latvian Lithuanian Croatian Serbian Slovenian".split())
DIETS = frozenset({"vegan", "vegetarian", "pescatarian", "pescetarian"})
JOB_ACRONYMS = frozenset({"CEO", "CTO", "CFO", "COO", "CIO", "CISO", "CPO", "VP", "SVP", "EVP", "PM"})
# A regex alternation: "I have a dog named Rex" -> pets.
PET_WORDS = r"(?:dogs?|cats?|puppy|puppies|kittens?|rabbits?|hamsters?|parrots?|birds?|fish|horses?|turtles?|snakes?)"
# "I'm a <word> ..." that starts no job title ("I'm a bit tired", "I'm a big fan of").
JOB_REJECT_FIRST = frozenset("bit little lot fan member part kind sort type huge big".split())

IRREGULAR_PAST = frozenset(
    "ran went bought saw met ate drank wrote made took gave got won lost built flew drove swam sang began "
    "broke caught chose did drew fell found forgot held kept paid rode sold sent spent taught told threw "
    "wore sat stood slept spoke bit hit fought brought became read run gone seen eaten drunk written taken "
    "given gotten flown driven swum sung begun broken chosen done drawn fallen forgotten ridden thrown "
    "worn spoken".split())
MOTION_PAST = frozenset("went came flew drove walked ran rode travelled traveled returned moved got".split())
STATIVE_PAST = frozenset(
    "liked loved hated wanted needed used wished hoped seemed believed guessed wondered preferred owned "
    "meant appeared belonged mattered cared assumed supposed decided planned tried".split())
# A regex alternation: adverbs dropped after "I"/"I'm" ("I now live in Oslo").
ADVERBS = r"(?:now|currently|still|also|actually|really|just|recently|presently|already|absolutely|totally)"
# Words an instruction slug leaves out besides the label stop words ("From now on ...").
INSTRUCTION_LEAD_WORDS = frozenset({"please", "from", "now", "going", "forward", "future"})

# Languages an instruction may name ("Always answer in German" -> label language).
LANGUAGE_NAMES = frozenset(
    "English German French Spanish Italian Portuguese Dutch Swedish Norwegian Danish Finnish Icelandic Polish "
    "Czech Slovak Hungarian Romanian Bulgarian Greek Turkish Russian Ukrainian Chinese Mandarin Cantonese "
    "Japanese Korean Hindi Urdu Bengali Punjabi Tamil Telugu Arabic Hebrew Persian Farsi Vietnamese Thai "
    "Indonesian Malay Tagalog Filipino Swahili Welsh Irish Catalan Basque Galician Estonian Latvian "
    "Lithuanian Croatian Serbian Slovenian Latin Esperanto Afrikaans".split())
# What an instruction governs, by the words in it (first match wins; regexes, case-insensitive).
INSTRUCTION_TOPICS = (
    ("response_length", r"\b(?:short|shorter|brief|briefly|concise|concisely|succinct|succinctly|lengthy|verbose|"
                        r"in detail|detailed|one (?:sentence|line|paragraph)|(?:at most|no more than|under) \d+ "
                        r"(?:words|sentences|lines))\b"),
    ("format", r"\b(?:bullet(?:ed)?(?: points?| lists?)?|numbered lists?|markdown|tables?|json|headings|"
               r"code blocks?|plain text)\b"),
    ("tone", r"\b(?:formal|informal|casual|friendly|polite|professional|tone)\b"),
)
