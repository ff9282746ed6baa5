"""The offline extractor, pattern by pattern (see the table in its module docstring)."""

import os
import subprocess
import sys

import pytest

from agent_memory.adapters.offline import instruction_label, is_question, offline_extract
from agent_memory.models.extraction import ExtractionOutput
from agent_memory.rules.self_entity import SELF_NAME

pytestmark = pytest.mark.adapter

U = SELF_NAME


def attrs(text, **kw):
    out = offline_extract(text, **kw)
    return [(a.entity, a.key, a.value) + (("NOT",) if a.negated else ()) + ((a.valid_from,) if a.valid_from else ())
            for a in out.attributes]


def rels(text, **kw):
    return [(r.subject, r.label, r.object) + (("NOT",) if r.negated else ())
            for r in offline_extract(text, **kw).relations]


def entities(text, **kw):
    return {(e.name, e.type) for e in offline_extract(text, **kw).entities}


# --- names -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["My name is Alice", "my name's Alice.", "I'm Alice", "I am Alice", "Hi, I'm Alice!"])
def test_name(text):
    assert attrs(text) == [(U, "name", "Alice")]


def test_full_name():
    assert attrs("I'm Alice Smith") == [(U, "name", "Alice Smith")]


@pytest.mark.parametrize("text", ["Call me Al", "You can call me Al", "Please call me Al"])
def test_call_me_is_a_nickname(text):
    assert attrs(text) == [(U, "nickname", "Al")]


@pytest.mark.parametrize("text", ["I'm tired", "I'm Sorry", "I'm not sure", "I'm here"])
def test_states_are_not_names(text):
    assert attrs(text) == []


# --- work ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "title"), [
    ("I'm a data scientist", "data scientist"),
    ("I am an engineer", "engineer"),
    ("I work as a CTO", "CTO"),
    ("I work as CTO", "CTO"),
    ("I'm CTO", "CTO"),
    ("My job title is product manager", "product manager"),
])
def test_job_title(text, title):
    assert attrs(text) == [(U, "job_title", title)]


@pytest.mark.parametrize(("text", "org"), [
    ("I work at Acme", "Acme"),
    ("I work for Acme Corp", "Acme Corp"),
    ("I'm working at Acme", "Acme"),
    ("I'm employed by Acme", "Acme"),
    ("I joined Acme", "Acme"),
])
def test_employer(text, org):
    assert attrs(text) == [(U, "employer", org)]
    assert (org, "organisation") in entities(text)


@pytest.mark.parametrize("text", ["I'm CTO at Acme", "I'm the CTO of Acme", "I work as a CTO at Acme"])
def test_job_title_and_employer(text):
    assert attrs(text) == [(U, "job_title", "CTO"), (U, "employer", "Acme")]


def test_job_title_at_an_unnamed_place_keeps_the_title():
    assert attrs("I'm a nurse at the local hospital") == [(U, "job_title", "nurse")]


def test_joined_with_time():
    assert attrs("I joined Globex in March") == [(U, "employer", "Globex", "in March")]


# --- locations -------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["I live in London", "I'm based in London", "I'm living in London",
                                  "I currently live in London", "I now live in London with my wife"])
def test_location(text):
    assert attrs(text) == [(U, "location", "London")]
    assert ("London", "location") in entities(text)


def test_move_with_event_time():
    assert attrs("I moved to Berlin last month") == [(U, "location", "Berlin", "last month")]
    assert attrs("Last month I moved to Berlin") == [(U, "location", "Berlin", "Last month")]
    assert attrs("I just moved to Berlin") == [(U, "location", "Berlin")]


def test_move_from_to():
    assert attrs("I moved from London to Berlin") == [(U, "location", "London", "NOT"), (U, "location", "Berlin")]


def test_duration_becomes_valid_from():
    assert attrs("I've lived in London for 5 years") == [(U, "location", "London", "for 5 years")]


@pytest.mark.parametrize("text", ["I'm from Spain", "I'm originally from Spain", "I grew up in Spain"])
def test_hometown(text):
    assert attrs(text) == [(U, "hometown", "Spain")]


# --- likes and preferences ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["I like sushi", "I love sushi", "I enjoy sushi", "I really like sushi",
                                  "I'm a big fan of sushi", "I'm into sushi"])
def test_likes(text):
    assert attrs(text) == [(U, "likes", "sushi")]


def test_likes_list_is_split():
    assert attrs("I love sushi, ramen and tempura") == [(U, "likes", "sushi"), (U, "likes", "ramen"),
                                                         (U, "likes", "tempura")]


@pytest.mark.parametrize("text", ["I hate olives", "I dislike olives", "I can't stand olives"])
def test_dislikes(text):
    assert attrs(text) == [(U, "dislikes", "olives")]


def test_dont_like_is_a_dislike_and_closes_the_like():
    assert attrs("I don't like olives") == [(U, "likes", "olives", "NOT"), (U, "dislikes", "olives")]


def test_prefer_over():
    assert attrs("I prefer tea over coffee") == [(U, "preferences", "tea over coffee")]
    assert attrs("I prefer tea to coffee") == [(U, "preferences", "tea over coffee")]
    assert attrs("I prefer window seats") == [(U, "preferences", "window seats")]


def test_allergies_languages_interests_pets():
    assert attrs("I'm allergic to peanuts") == [(U, "allergies", "peanuts")]
    assert attrs("I speak English and German") == [(U, "languages", "English"), (U, "languages", "German")]
    assert attrs("I'm interested in astronomy") == [(U, "interests", "astronomy")]
    assert attrs("I have a dog") == [(U, "pets", "dog")]


def test_age_nationality_diet():
    assert attrs("I'm 34") == [(U, "age", "34")]
    assert attrs("I'm 34 years old") == [(U, "age", "34")]
    assert attrs("I'm German") == [(U, "nationality", "German")]
    assert attrs("I'm vegan") == [(U, "diet", "vegan")]
    assert attrs("I'm a vegetarian") == [(U, "diet", "vegetarian")]


def test_generic_my_key_is_value():
    assert attrs("My email is alice@example.com") == [(U, "email", "alice@example.com")]
    assert attrs("My phone number is 555 1234") == [(U, "phone", "555 1234")]
    assert attrs("My favourite colour is blue") == [(U, "favourite_colour", "blue")]
    assert attrs("My hobbies are hiking and chess") == [(U, "hobbies", "hiking"), (U, "hobbies", "chess")]


def test_a_date_value_is_not_mistaken_for_an_event_time():
    assert attrs("My birthday is on 5 May") == [(U, "birthday", "5 May")]


# --- relations -------------------------------------------------------------------------------


def test_kin_with_name_and_facts():
    text = "My sister Emma lives in Oslo"
    assert rels(text) == [(U, "sister", "Emma")]
    assert attrs(text) == [("Emma", "location", "Oslo")]
    assert {("Emma", "person"), ("Oslo", "location")} <= entities(text)


def test_kin_facts_with_several_predicates_and_times():
    text = "My sister Emma moved to Oslo last year and works at Equinor"
    assert rels(text) == [(U, "sister", "Emma")]
    assert attrs(text) == [("Emma", "location", "Oslo", "last year"), ("Emma", "employer", "Equinor")]


def test_several_named_kin():
    assert rels("My sisters Emma and Ann live in Oslo") == [(U, "sister", "Emma"), (U, "sister", "Ann")]


@pytest.mark.parametrize("text", ["My manager is Bob", "Bob is my manager", "My boss is Bob", "I report to Bob",
                                  "My manager's name is Bob"])
def test_manager(text):
    assert rels(text) == [(U, "manager", "Bob")]


def test_manager_change():
    assert rels("My manager is now Dave") == [(U, "manager", "Dave")]


def test_work_and_social_relations():
    assert rels("I work with Carol") == [(U, "colleague", "Carol")]
    assert rels("I work with Carol and Dave") == [(U, "colleague", "Carol"), (U, "colleague", "Dave")]
    assert rels("I'm married to Dan") == [(U, "spouse", "Dan")]
    assert rels("I'm friends with Eve") == [(U, "friend", "Eve")]
    assert rels("Emma is my sister") == [(U, "sister", "Emma")]


def test_negated_relations():
    assert rels("Bob is no longer my manager") == [(U, "manager", "Bob", "NOT")]
    assert rels("I'm no longer married to Dan") == [(U, "spouse", "Dan", "NOT")]
    assert rels("I don't work with Carol anymore") == [(U, "colleague", "Carol", "NOT")]


def test_unnamed_kin_extracts_nothing():
    out = offline_extract("My sister is a doctor")
    assert out.attributes == [] and out.relations == []


# --- instructions -------------------------------------------------------------------------------


def test_always_instruction():
    out = offline_extract("Always answer in German")
    assert [(i.label, i.description) for i in out.instructions] == [("language", "Always answer in German.")]
    assert out.attributes == []


def test_never_instruction():
    out = offline_extract("Never mention my salary.")
    assert [(i.label, i.description) for i in out.instructions] == [("never_mention_salary",
                                                                      "Never mention my salary.")]


def test_dont_instruction():
    assert [i.label for i in offline_extract("Don't use emojis").instructions] == ["never_use_emojis"]
    assert [i.label for i in offline_extract("Do not use emojis").instructions] == ["never_use_emojis"]


def test_from_now_on_call_me_is_instruction_and_nickname():
    out = offline_extract("From now on call me Al")
    assert [(i.label, i.description) for i in out.instructions] == [("form_of_address", "From now on call me Al.")]
    assert attrs("From now on call me Al") == [(U, "nickname", "Al")]


def test_from_now_on_with_a_subject_is_a_fact():
    out = offline_extract("From now on I work at Globex")
    assert out.instructions == []
    assert attrs("From now on I work at Globex") == [(U, "employer", "Globex")]


def test_instruction_label():
    assert instruction_label("Please always reply in French") == "language"
    assert instruction_label("Call me Al") == "form_of_address"
    assert instruction_label("Always keep answers short") == "response_length"


# --- negations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["I no longer work at Acme", "I don't work for Acme anymore", "I left Acme",
                                  "I quit Acme", "I stopped working at Acme"])
def test_employer_negated(text):
    assert attrs(text) == [(U, "employer", "Acme", "NOT")]


def test_left_with_time():
    assert attrs("I left Acme last week") == [(U, "employer", "Acme", "NOT", "last week")]


@pytest.mark.parametrize("text", ["I don't live in London anymore", "I no longer live in London",
                                  "I'm no longer based in London", "I moved away from London"])
def test_location_negated(text):
    assert attrs(text) == [(U, "location", "London", "NOT")]


@pytest.mark.parametrize("text", ["I don't like sushi anymore", "I no longer like sushi",
                                  "I don't really like sushi any more"])
def test_likes_negated(text):
    assert attrs(text) == [(U, "likes", "sushi", "NOT")]


def test_other_negations():
    assert attrs("I'm no longer a student") == [(U, "job_title", "student", "NOT")]
    assert attrs("I'm not vegan anymore") == [(U, "diet", "vegan", "NOT")]
    assert attrs("My email is no longer a@b.c") == [(U, "email", "a@b.c", "NOT")]


# --- actions ----------------------------------------------------------------------------------


def test_past_tense_action():
    out = offline_extract("I ran a marathon yesterday")
    assert [(a.actor, a.verb, a.object, a.occurred_at) for a in out.actions] == [(U, "ran", "marathon", "yesterday")]
    assert out.actions[0].summary == "User ran a marathon yesterday"
    assert out.attributes == []


def test_action_summary_uses_the_speaker_name():
    out = offline_extract("Yesterday I bought a new bike", speaker_name="Alice")
    assert [(a.verb, a.object, a.occurred_at) for a in out.actions] == [("bought", "new bike", "Yesterday")]
    assert out.actions[0].summary == "Alice bought a new bike yesterday"


def test_regular_and_perfect_actions():
    assert [(a.verb, a.object) for a in offline_extract("I've finished the report").actions] == [
        ("finished", "report")]
    assert [(a.verb, a.object) for a in offline_extract("I went to Paris last week").actions] == [("went", "Paris")]


@pytest.mark.parametrize("text", ["I liked it", "I used to live in Paris", "I decided to quit", "I'd like a coffee"])
def test_non_actions(text):
    out = offline_extract(text)
    assert out.actions == [] and out.attributes == []


# --- third person and the speaker -----------------------------------------------------------------------


def test_third_person_statements():
    assert attrs("Alice works at Acme") == [("Alice", "employer", "Acme")]
    assert attrs("Bob lives in Paris") == [("Bob", "location", "Paris")]
    assert attrs("Alice is CTO at Acme") == [("Alice", "job_title", "CTO"), ("Alice", "employer", "Acme")]
    assert attrs("Alice no longer works at Acme") == [("Alice", "employer", "Acme", "NOT")]
    assert attrs("Bob doesn't like sushi anymore") == [("Bob", "likes", "sushi", "NOT")]
    assert attrs("Alice's email is a@b.c") == [("Alice", "email", "a@b.c")]
    assert [(a.actor, a.verb) for a in offline_extract("Bob ran a marathon").actions] == [("Bob", "ran")]


def test_third_person_about_the_speaker_keeps_the_name_for_the_resolver():
    # reconciliation maps "Alice" to the self entity when speaker_name is Alice
    assert attrs("Alice works at Acme", speaker_name="Alice") == [("Alice", "employer", "Acme")]


def test_first_person_is_the_self_entity():
    assert (U, "person") in entities("I live in London")


def test_known_entities_keep_their_spelling():
    assert rels("I work with carol", known_entities=["Carol"]) == [(U, "colleague", "Carol")]
    assert attrs("I work at ACME", known_entities=["Acme"]) == [(U, "employer", "Acme")]


def test_type_learned_earlier_in_the_text_is_kept():
    out = offline_extract("I work at Acme. Acme is based in Paris.")
    assert [(a.entity, a.entity_type, a.key) for a in out.attributes][-1] == ("Acme", "organisation", "location")


# --- questions, hedges, sentences ------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["Where do I live?", "What is my name", "Do you know where I work?",
                                  "How old am I", "Is my manager Bob?", "Can you remind me what I like",
                                  "Who is my sister"])
def test_questions_extract_nothing(text):
    assert offline_extract(text).is_empty()


def test_is_question():
    assert is_question("Do you remember?")
    assert is_question("where do I live")
    assert not is_question("Do not mention my salary")
    assert not is_question("I live in London")


def test_hedged_statements_have_low_confidence():
    out = offline_extract("I think I live in Paris")
    assert [(a.key, a.value, a.confidence) for a in out.attributes] == [("location", "Paris", 0.4)]
    assert offline_extract("I live in Paris").attributes[0].confidence == 0.9


def test_multiple_sentences_and_clauses():
    text = "Hi, I'm Alice and I work at Acme. I live in London! I like tea; I hate coffee. Where is my car?"
    assert attrs(text) == [(U, "name", "Alice"), (U, "employer", "Acme"), (U, "location", "London"),
                           (U, "likes", "tea"), (U, "dislikes", "coffee")]


def test_one_subject_two_predicates():
    assert attrs("I live in Paris and work at Acme") == [(U, "location", "Paris"), (U, "employer", "Acme")]
    assert attrs("I live in Paris since 2020 and work at Acme since 2021") == [
        (U, "location", "Paris", "since 2020"), (U, "employer", "Acme", "since 2021")]


def test_fillers_are_ignored():
    assert attrs("Actually, by the way, I live in Rome") == [(U, "location", "Rome")]
    assert attrs("Remember that I'm vegan") == [(U, "diet", "vegan")]


def test_lowercase_i_and_curly_apostrophes():
    assert attrs("i live in london") == [(U, "location", "london")]
    assert attrs("I\u2019m Alice") == [(U, "name", "Alice")]


def test_empty_and_irrelevant_text():
    assert offline_extract("").is_empty()
    assert offline_extract("The weather is nice.").is_empty()
    assert isinstance(offline_extract("ok"), ExtractionOutput)


def test_deterministic_across_processes():
    # Same text, fresh interpreters with different string-hash seeds: set or dict ordering
    # leaking into the output would make the two runs differ.
    text = "My name is Alice. I moved to Berlin last month and I love jazz, sushi and hiking."
    code = ("import sys; from agent_memory.adapters.offline import offline_extract; "
            "print(offline_extract(sys.argv[1]).model_dump_json())")
    runs = [subprocess.run([sys.executable, "-c", code, text], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")]
    assert runs[0] == runs[1]
    assert ExtractionOutput.model_validate_json(runs[0]) == offline_extract(text)
    assert [(a.key, a.value) for a in offline_extract(text).attributes] == [
        ("name", "Alice"), ("location", "Berlin"), ("likes", "jazz"), ("likes", "sushi"), ("likes", "hiking")]


def test_an_employer_and_the_title_it_employs_as_are_two_facts():
    assert attrs("I work at Globex as a data engineer.") == [(U, "employer", "Globex"), (U, "job_title", "data engineer")]
    assert attrs("I work for Globex as a senior data engineer") == [
        (U, "employer", "Globex"), (U, "job_title", "senior data engineer")]
    assert attrs("I joined Initech as a CTO last year") == [
        (U, "employer", "Initech", "last year"), (U, "job_title", "CTO", "last year")]
    assert attrs("Alice works at Globex as an analyst") == [("Alice", "employer", "Globex"), ("Alice", "job_title", "analyst")]
    out = offline_extract("I work at Globex as a data engineer.")
    assert ("Globex", "organisation") in [(e.name, e.type) for e in out.entities]


def test_a_named_pet_is_a_pet_with_its_name():
    out = offline_extract("I have a dog named Rex.")
    assert [(a.entity, a.key, a.value) for a in out.attributes] == [(U, "pets", "dog"), ("Rex", "species", "dog")]
    assert [(r.subject, r.label, r.object, r.object_type) for r in out.relations] == [(U, "pet", "Rex", "other")]
    assert ("Rex", "other") in [(e.name, e.type) for e in out.entities]
    two = offline_extract("I've got two cats called Tom and Jerry")
    assert [(r.label, r.object) for r in two.relations] == [("pet", "Tom"), ("pet", "Jerry")]
    assert [(a.entity, a.key, a.value) for a in two.attributes] == [
        (U, "pets", "two cats"), ("Tom", "species", "cat"), ("Jerry", "species", "cat")]


@pytest.mark.parametrize(("text", "label"), [
    ("Always answer in short sentences.", "response_length"),
    ("Please be concise.", None),  # not an instruction the patterns take ("be" leads nothing)
    ("Always reply in bullet points.", "format"),
    ("Always use a formal tone", "tone"),
    ("Always answer in German.", "language"),
    ("Never answer in Spanish", "language"),
    ("Don't use emojis", "never_use_emojis"),
])
def test_an_instruction_is_labelled_by_what_it_governs(text, label):
    labels = [i.label for i in offline_extract(text).instructions]
    assert labels == ([label] if label else [])


# --- ordinary sentences (issue 61) -------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("Hi! I'm Alice, CTO at Acme.", [(U, "name", "Alice"), (U, "job_title", "CTO"), (U, "employer", "Acme")]),
    ("Hello, I'm Bruno, a nurse at St Mary's.",
     [(U, "name", "Bruno"), (U, "job_title", "nurse"), (U, "employer", "St Mary's")]),
    ("I'm Chen, a data engineer.", [(U, "name", "Chen"), (U, "job_title", "data engineer")]),
])
def test_self_introduction_with_role_and_employer(text, expected):
    assert attrs(text) == expected


@pytest.mark.parametrize("text", ["I'm Fay, a big fan of jazz.", "I'm tired, a long day at work.", "I'm Dan, sorry."])
def test_self_introduction_does_not_read_a_role_that_is_not_one(text):
    assert not any(a[1] == "job_title" for a in attrs(text))


@pytest.mark.parametrize("text, kind, name", [
    ("My dog is called Rex.", "dog", "Rex"),
    ("My cat is named Mochi.", "cat", "Mochi"),
    ("My rabbit's name is Clover.", "rabbit", "Clover"),
])
def test_a_pet_called_something(text, kind, name):
    assert attrs(text) == [(U, "pets", kind), (name, "species", kind)]
    assert rels(text) == [(U, "pet", name)]


def test_a_thing_called_something_has_the_name_as_its_value():
    assert attrs("My boat is called Wanda.") == [(U, "boat", "Wanda")]


@pytest.mark.parametrize("text, expected", [
    ("My favourite colour is teal and they have three cats named Tom and Jim.", [(U, "favourite_colour", "teal")]),
    ("My favourite tea is oolong because it is smooth.", [(U, "favourite_tea", "oolong")]),
    ("I live in Lyon but he lives in Nice.", [(U, "location", "Lyon")]),
    # a list inside the clause is still a list
    ("I like tea and coffee.", [(U, "likes", "tea"), (U, "likes", "coffee")]),
])
def test_a_value_ends_with_its_clause(text, expected):
    assert attrs(text) == expected


@pytest.mark.parametrize("text", ["Next run in 24h.", "Message received.", "Payment failed.",
                                  "Backup finished at noon.", "Update scheduled for Monday."])
def test_sentence_initial_words_that_are_not_names_make_no_entity(text):
    out = offline_extract(text)
    assert out.entities == [] and out.actions == [] and out.attributes == []


@pytest.mark.parametrize("text", ["Ann ran a marathon yesterday.", "Bob works at Acme."])
def test_a_name_followed_by_what_a_person_does_is_still_someone(text):
    assert (text.split()[0], "person") in entities(text)


def test_a_diet_stated_with_now_closes_the_other_diets():
    assert attrs("I'm pescatarian now.") == [
        (U, "diet", "omnivore", "NOT", "now"), (U, "diet", "vegan", "NOT", "now"),
        (U, "diet", "vegetarian", "NOT", "now"), (U, "diet", "pescatarian", "now")]
    assert attrs("I'm vegetarian.") == [(U, "diet", "vegetarian")]  # without "now" nothing closes


@pytest.mark.parametrize("text, about", [
    ("I'm not sure yet whether I'll stay.", "whether I'll stay"),
    ("I haven't decided where to live.", "where to live"),
    ("I don't know yet if I'll take the job.", "if I'll take the job"),
])
def test_a_hedge_about_a_decision_is_an_uncertainty(text, about):
    out = offline_extract(text)
    assert [u.about for u in out.uncertainties] == [f"{U}: {about}"]
    assert out.attributes == [] and out.relations == []


@pytest.mark.parametrize("text", ["I'm not sure.", "I don't know."])
def test_a_bare_hedge_is_about_nothing(text):
    assert offline_extract(text).uncertainties == []


def test_she_and_he_refer_to_the_last_person_named():
    text = "My manager is Priya. She is based in Pune. My brother Tom lives in Leeds and he works at Arup."
    assert attrs(text) == [("Priya", "location", "Pune"), ("Tom", "location", "Leeds"), ("Tom", "employer", "Arup")]
    assert rels(text) == [(U, "manager", "Priya"), (U, "brother", "Tom")]


def test_she_with_no_one_named_before_is_nobody():
    assert offline_extract("She is based in Pune.").attributes == []


def test_a_whole_conversation_reads_the_user_lines_only():
    text = "user: My manager is Priya.\nassistant: I live in Paris.\nuser: She is based in Pune."
    assert attrs(text) == [("Priya", "location", "Pune")]
    assert rels(text) == [(U, "manager", "Priya")]


@pytest.mark.parametrize("text", ["I started a new job at Hooli.", "I got a new job at Hooli.", "I switched to Hooli.",
                                  "I took a position with Hooli."])
def test_a_new_employer_in_ordinary_words(text):
    assert attrs(text) == [(U, "employer", "Hooli")]


@pytest.mark.parametrize("text", ["I switched to decaf.", "I started a new hobby."])
def test_a_switch_or_start_that_names_no_employer(text):
    assert not any(a[1] == "employer" for a in attrs(text))
