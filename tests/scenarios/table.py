"""The scenarios: memory over time as a user lives it. Each runs in a fresh context; see
``steps`` for what a step does. To add one, append a ``Scenario`` here."""

from __future__ import annotations

from tests.scenarios.steps import (
    Scenario,
    ask,
    attribute,
    chat,
    context,
    conversation,
    document,
    facts,
    no_entity,
    relation,
    reply,
    say,
    unsure,
    values,
)

SCENARIOS = [
    Scenario("a move supersedes the old city, which stays in the past and below the new", [
        say("I live in London.", at="2026-03-10"),
        say("I moved to Berlin last month.", at="2026-05-20"),
        values("location", ["Berlin"]),
        values("location", ["London"], as_of="2026-04-01"),
        ask("Where do I live?", first="User location: Berlin", tier=1, key="location",
            order=["User location: Berlin", "I moved to Berlin last month.", "I live in London."],
            absent=["User location: London"]),
        ask("Where do I live?", as_of="2026-04-01", first="User location: London",
            order=["I live in London.", "I moved to Berlin last month."], absent=["User location: Berlin"]),
        context("Where do I live?", contains=["(turn, user, 2026-03-10, superseded 2026-04-20) I live in London."]),
        chat("Where do I live?", says=["Berlin"], never=["London"]),
    ]),
    Scenario("a correction replaces the value it corrects", [
        say("I am 30 years old.", at="2026-03-01"),
        say("Actually I am 31.", at="2026-03-02"),
        values("age", ["31"]),
        ask("How old am I?", first="User age: 31", tier=1, key="age", absent=["User age: 30"]),
        chat("How old am I?", says=["31"], never=["30"]),
    ]),
    Scenario("a negation closes the value it negates", [
        say("I like olives.", at="2026-03-01"),
        say("I like sailing.", at="2026-03-01"),
        say("I don't like olives anymore.", at="2026-04-01"),
        values("likes", ["sailing"]),
        values("likes", ["olives", "sailing"], as_of="2026-03-15"),
        ask("What do I like?", first="User likes: sailing", tier=1, absent=["User likes: olives"]),
    ]),
    Scenario("values of a multi-valued key accumulate", [
        say("I speak French.", at="2026-03-01"),
        say("I speak German.", at="2026-03-05"),
        values("languages", ["French", "German"]),
        ask("What languages do I speak?", tier=1, key="languages",
            order=["User languages: German", "User languages: French"]),
    ]),
    Scenario("values in different scopes coexist", [
        facts("I live in Madrid.", attribute("location", "Madrid")),
        facts("I live in Berlin.", attribute("location", "Berlin"), scopes=[["org/acme/user/alice"]]),
        values("location", ["Berlin", "Madrid"]),
        ask("Where do I live?", tier=1, key="location", order=["User location: Berlin", "User location: Madrid"]),
    ]),
    Scenario("a statement that arrives late takes its place in the past", [
        say("I live in Berlin.", at="2026-05-20"),
        say("I live in London.", at="2026-03-10"),  # observed earlier, written later
        values("location", ["Berlin"]),
        values("location", ["London"], as_of="2026-04-01"),
        ask("Where do I live?", first="User location: Berlin", tier=1,
            order=["I live in Berlin.", "I live in London."]),
        ask("Where do I live?", as_of="2026-04-01", first="User location: London",
            order=["I live in London.", "I live in Berlin."]),
    ]),
    Scenario("the question's key decides the answer, whatever was said last", [
        say("I work at Globex.", at="2026-03-01"),
        say("I moved to Madrid.", at="2026-03-02"),
        ask("Where do I work?", first="User employer: Globex", tier=1, key="employer"),
        ask("Who is my employer?", first="User employer: Globex", tier=1, key="employer"),
        ask("Where do I live?", first="User location: Madrid", tier=1, key="location"),
        chat("Where do I work?", says=["Globex"], never=["Madrid"]),
    ]),
    Scenario("a relation answers the role it names", [
        facts("Ann is my boss.", relation("boss", "Ann")),
        facts("Bob is a friend of mine.", relation("friend", "Bob")),
        ask("Who is my boss?", first="User manager: Ann", tier=1, key="manager"),
        ask("Who are my friends?", first="User friend: Bob", tier=1, key="friend"),
    ]),
    Scenario("a question that names no key gets no tier-1 answer", [
        say("I work at Globex.", at="2026-03-01"),
        ask("Tell me something.", tier=3),
    ]),
    Scenario("questions and the assistant's replies rank below the statement that answers", [
        say("I moved to Berlin last month.", at="2026-05-20"),
        chat("Where do I live?", says=["Berlin"]),
        chat("Where do I live?", says=["Berlin"], never=["From memory: From memory"]),
        ask("Where do I live?", first="User location: Berlin",
            order=["User location: Berlin", "I moved to Berlin last month.", "Where do I live?"]),
    ]),
    Scenario("a stored question ranks below the document passage that answers it", [
        say("How long does shipping take?", infer="none", at="2026-03-01"),
        document("Policy", "# Shipping\n\nShipping takes three working days.\n\n# Returns\n\nReturns are free."),
        ask("How long does shipping take?", order=["Shipping\n\nShipping takes three working days.",
                                                   "How long does shipping take?"]),
    ]),
    Scenario("an assistant echo ranks below the user's own words", [
        say("My favourite tea is oolong, sometimes with a little honey.", infer="none", at="2026-03-01"),
        reply("Favourite tea oolong: your favourite tea is oolong.", at="2026-03-02"),
        ask("favourite tea oolong", order=["My favourite tea is oolong, sometimes with a little honey.",
                                           "Favourite tea oolong: your favourite tea is oolong."]),
        chat("What is my favourite tea?", says=["honey"], never=["Favourite tea oolong"]),
    ]),
    Scenario("a refusal cached before the fact arrives is never served after it", [
        chat("What is my favourite mountain?", says=["I don't have anything in memory"], cache=True),
        say("My favourite mountain is Mount Kenya."),
        chat("What is my favourite mountain?", says=["Mount Kenya"], cache=True, cites=1),
        # the refusal is not evidence: asked once more, nothing quotes it
        context("What is my favourite mountain?", contains=["My favourite mountain is Mount Kenya."],
                lacks=["I don't have anything in memory"]),
    ]),
    Scenario("a document passage outranks the question and the reply that echo it", [
        document("Store policy", "# Returns\n\nItems may be returned within 30 days of delivery.\n\n"
                                 "# Shipping\n\nOrders ship from our warehouse in Leeds."),
        chat("How many days do I have to return items?", says=["30 days"], cites=1),
        chat("How many days do I have to return items?", says=["30 days"], cited=["within 30 days"]),
        context("How many days do I have to return items?",
                order=["Items may be returned within 30 days of delivery.",
                       "(turn, user", "(turn, assistant"]),
    ]),
    Scenario("questions about the user answer from the profile, each fact cited", [
        say("My name is Dana."),
        say("I work at Initech as a product designer."),
        say("I live in Porto."),
        say("I like climbing."),
        ask("What do you know about me?", tier=1, k=8,
            order=["Dana name: Dana", "Dana employer: Initech", "Dana location: Porto", "Dana likes: climbing"]),
        chat("What do you know about me?", says=["Dana", "Initech", "product designer", "Porto", "climbing"],
             cites=5, cited=["name: Dana", "employer: Initech", "location: Porto", "likes: climbing"]),
        chat("Who am I?", says=["Dana", "Initech", "Porto"], cites=5),
        # the profile leads; the replies that restate it rank below every statement
        context("Who am I?", order=["Dana name: Dana", "I like climbing.", "I live in Porto.", "(turn, assistant"],
                lacks=["Who am I?"]),
        chat("What is my job?", says=["product designer"], never=["climbing"]),
    ]),
    Scenario("a question about a named person answers from that person's facts", [
        say("My manager is Priya."),
        facts("Priya lives in Pune.", attribute("location", "Pune", {"type": "person", "name": "Priya"})),
        facts("Priya speaks Marathi.", attribute("languages", "Marathi", {"type": "person", "name": "Priya"})),
        chat("Tell me about Priya", says=["Pune", "Marathi"], cites=2),
        chat("What do you know about me?", says=["Priya"], never=["Pune"]),
    ]),
    Scenario("a profile question with nothing stored is refused plainly", [
        chat("What do you know about me?", says=["I don't have anything in memory"]),
        chat("Who am I?", says=["I don't have anything in memory"]),
    ]),
    Scenario("the offline extractor reads a self-introduction with a role and an employer", [
        say("Hi! I'm Alice, CTO at Acme."),
        values("name", ["Alice"]),
        values("job_title", ["CTO"]),
        values("employer", ["Acme"]),
    ]),
    Scenario("a pet that is called something is a pet with that name", [
        say("My dog is called Rex."),
        values("pets", ["dog"]),
        values("dog", []),
        values("species", ["dog"], entity="other/rex"),
    ]),
    Scenario("a value ends with its clause", [
        say("My favourite colour is teal and they have three cats named Tom and Jim."),
        values("favourite_colour", ["teal"]),
    ]),
    Scenario("words at the start of a sentence that are not names make no entity", [
        say("Next run in 24h."),
        say("Message received."),
        no_entity("person/next"),
        no_entity("person/message"),
    ]),
    Scenario("a diet stated with now replaces the one before", [
        say("I'm vegetarian.", at="2026-03-01"),
        say("I'm pescatarian now.", at="2026-04-01"),
        values("diet", ["pescatarian"]),
        values("diet", ["vegetarian"], as_of="2026-03-15"),
    ]),
    Scenario("a whole conversation resolves she to the last person named", [
        conversation(["My manager is Priya.", "assistant: Noted.", "She is based in Pune."]),
        values("location", ["Pune"], entity="person/priya"),
        ask("Who is my manager?", first="User manager: Priya", tier=1),
    ]),
    Scenario("a hedge about a decision is an uncertainty, not a fact", [
        say("I'm not sure yet whether I'll stay in Lisbon."),
        unsure("whether I'll stay in Lisbon"),
        values("location", []),
    ]),
    Scenario("a two-part question is answered in two cited parts", [
        document("Shop policy", "# Returns\n\nItems may be returned within 30 days of delivery.\n\n"
                                "# Shipping\n\nOrders ship from our warehouse in Leeds."),
        chat("How long do I have to return items, and where do orders ship from?",
             says=["(1)", "30 days", "(2)", "Leeds"], cites=2, cited=["within 30 days", "warehouse in Leeds"]),
        chat("Where do orders ship from? And what is my favourite opera?",
             says=["(1)", "Leeds", "(2) I don't have anything in memory about that."], cites=1),
    ]),
    Scenario("a question about the conversation is answered from the window", [
        chat("I am planning a trip to Kyoto in April.", session="trip"),
        chat("Which temples should I see there?", session="trip"),
        chat("What did I just ask?", session="trip", says=["Which temples should I see there?"]),
        chat("What did I tell you at the start of this conversation?", session="trip",
             says=["planning a trip to Kyoto in April"]),
        # a new conversation has no window: a plain refusal, nothing invented
        chat("What did I tell you at the start of this conversation?", says=["I don't have anything in memory"]),
    ]),
]
