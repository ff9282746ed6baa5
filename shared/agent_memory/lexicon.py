"""English word tables shared by query analysis, search, the hashing embedder and the offline
model (pure data, no imports from the rest of the package).

Stop words: one core list, ``FUNCTION_WORDS`` (articles, pronouns, auxiliaries, prepositions,
question words). Each user states its list as the core plus or minus named words, so the
differences are visible here rather than hidden in five copies. They are not made equal: the
hashing embedder's list decides stored vectors (changing it changes every embedding of an
existing index) and the others decide ranking, so each keeps the words it had.
"""

from __future__ import annotations

FUNCTION_WORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her him his "
    "i if in into is it its me my of on or our she so that the their them then there these they "
    "this those to us was we were what when where which who whom why will with would you your".split())

# Lexical search (embedded index BM25 query): the core list. OR-ing these into an FTS5 query
# makes it score nearly every row of a large index.
SEARCH_STOP_WORDS = FUNCTION_WORDS

# Query analysis (content words, entity-name candidates): also possessives, quantifiers and
# chat verbs that carry no retrieval signal in a question.
QUERY_STOP_WORDS = FUNCTION_WORDS | frozenset(
    "about also am any being ever get got hers how just like mine ours some than theirs too whose yours".split())

# The offline chat model's word overlap: the longer English list (NLTK-like), without "us".
OVERLAP_STOP_WORDS = (FUNCTION_WORDS - {"us"}) | frozenset(
    "about above after again all am any being below between both doing down during each few further having "
    "here hers herself himself how itself just know more most myself no nor not now off once only other ours "
    "ourselves out over own please same should some such tell than theirs themselves through too under "
    "until up very while yours yourself yourselves".split())

# The documents' keyword index (services/documents/keywords.py): the overlap list and the query
# list together, plus words that are everywhere in prose and name no topic. It decides what
# is indexed: a change shows on documents ingested after it.
KEYWORD_STOP_WORDS = OVERLAP_STOP_WORDS | QUERY_STOP_WORDS | frozenset(
    "also among another because become becomes could does done each either else etc even every "
    "given got however into lets many may might much must neither one ones onto per rather really "
    "since still thus upon use used uses using via well within without yes".split())

# The hashing embedder: a shorter list plus the pieces a contraction splits into ("alice's",
# "don't", "we'll"). It decides stored vectors: changing it changes every embedding.
EMBEDDING_STOP_WORDS = (FUNCTION_WORDS - frozenset(
    "can could he her him his into she these those us whom why would".split())) | frozenset(
    "s t d ll m re ve".split())

# Slugs of instruction labels ("Never mention my salary" -> never_mention_salary).
LABEL_STOP_WORDS = frozenset("a an the to in of my me your for and on with about any ever".split())

# A sentence that starts with one of these is a question (unless it starts "do not").
QUESTION_WORDS = frozenset(
    "who what where when why how which whom whose do does did is are was were can could would will "
    "should shall have has am".split())

# Question phrases -> the attribute keys and relation labels they ask about. Each pattern is
# a whole phrase of a lower-cased question ("<s>" stands for its subject: "i", "emma", "my
# sister"), never one word: "where do i work" asks for the employer although "where" alone
# would say location. A "my|<name>'s <noun>" or "what|which <noun>" in a question also asks
# for the registry key or label the noun normalises to (``rules.vocabulary``: "company" ->
# employer, "boss" -> manager); ``rules.questions.asked_slots`` applies both. Values are
# registry keys (``rules.vocabulary.KEYS``) or labels (``LABELS``).
SLOT_QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"where (?:do|does|did) <s> (?:live|stay|reside)", ("location",)),
    (r"where (?:am|is|are|was|were) <s> (?:living|based|staying|now)", ("location",)),
    (r"where (?:did|has|have) <s> (?:move|moved|relocate|relocated)", ("location",)),
    (r"(?:what|which) (?:city|town|country|place) (?:do|does|did) <s> (?:live|stay|reside|move)", ("location",)),
    (r"where (?:am|is|are|was|were) <s> from", ("hometown",)),
    (r"where (?:was|were) <s> (?:born|raised)|where did <s> grow up", ("hometown",)),
    (r"where (?:do|does|did) <s> work|who (?:do|does|did) <s> work for|who employs <s>"
     r"|(?:what|which) (?:company|firm|organi[sz]ation) (?:do|does|did) <s> work", ("employer",)),
    (r"what (?:do|does|did) <s> do (?:for (?:a living|work)|at work)|what (?:do|does|did) <s> work as"
     r"|what (?:is|was) <s> (?:job|role|occupation|profession|position)", ("job_title",)),
    (r"what (?:am|is|are|was|were) <s> working on", ("current_project", "current_task")),
    (r"how old (?:am|is|are|was|were) <s>|what age (?:am|is|are) <s>", ("age",)),
    (r"when (?:was|were) <s> born|when (?:is|was) <s> birthday", ("birthday",)),
    (r"what (?:am|is|are) <s> called|what (?:do|does) <s> go by", ("name", "nickname")),
    (r"what (?:do|should) (?:you|we|they|people) call <s>", ("nickname", "name")),
    (r"(?:what|which) languages? (?:do|does|can) <s> speak|(?:do|does|can) <s> speak", ("languages",)),
    (r"what (?:do|does) <s> (?:like|love|enjoy)", ("likes", "interests")),
    (r"what (?:do|does) <s> (?:dislike|hate)|what (?:do|does) <s> not like", ("dislikes",)),
    (r"what (?:do|does) <s> prefer", ("preferences",)),
    (r"what (?:is|am|are) <s> allergic to|(?:is|am|are) <s> allergic", ("allergies",)),
    (r"(?:do|does) <s> have (?:a |any )?pets?", ("pets",)),
    (r"what (?:do|does|can|can't) <s> (?:not )?eat", ("diet", "allergies")),
    (r"how (?:am|is|are) <s> feeling", ("mood",)),
    (r"what (?:am|is|are) <s> (?:planning|going to do)", ("plans",)),
    (r"who (?:do|does) <s> report to", ("manager",)),
    (r"who (?:is|are) <s> married to", ("spouse",)),
)

# Question words -> the words stored facts use for the same thing ("Where do I live?" is
# answered by "User location: Berlin"; a fact line renders its key in words). The offline
# chat model adds them to a question's words before matching memory lines.
ANSWER_WORD_HINTS: dict[str, frozenset[str]] = {
    word: frozenset(words) for word, words in {
        "where": ("location", "based", "live", "city", "hometown"),
        "live": ("location", "based", "city"),
        "work": ("employer", "job", "title", "colleague", "manager"),
        "job": ("job", "title", "employer"),
        "name": ("name", "nickname"),
        "called": ("name", "nickname"),
        "old": ("age",),
    }.items()
}

# Lower-cased words that are never (part of) a name in a question: question words, pronouns,
# auxiliaries, prepositions, request verbs. Query analysis adds month and weekday names.
NOT_NAME_WORDS = frozenset(
    "what which who whom whose when where why how do does did is are was were has have had can could would will "
    "should might may am i i'm i've i'd i'll me my mine myself we our you your he she it they them his her their "
    "the a an this that these those there here and or but if in on at of for to from with by about as "
    "yes no not please tell show give list name describe explain remind".split())

# Capitalised words that start a statement but are not a name ("Actually I ...", "Thanks").
SENTENCE_START_NOT_NAMES = frozenset(
    "I I'm I've I'd I'll My Me We Our Your You He She It They His Her Their The This That These Those "
    "There Here Always Never Please From Today Yesterday Tomorrow Now Also And But So If When Then Yes No "
    "Ok Okay Thanks Hi Hello Hey Sorry Well Actually Maybe Probably Perhaps Don't Do Let Remember".split())

# "I'm <word>" that is a state, not a name ("I'm sorry", "I'm home").
NOT_NAME_ADJECTIVES = frozenset(
    "sorry fine good back done here ready happy sure glad okay ok tired hungry busy home new".split())
