"""The extraction reply written without a model (GRAPH_EXTRACTION=skeleton)."""

from __future__ import annotations

from varagity.graph.plain_extraction import DATE, NAME, PERSON, names_in, plain_extraction

THREAD = "Ingrid Bakke, Sara Lindqvist, Tomas Reyes"
LINES = (
    "[19:30] Ingrid Bakke: Supper club on Friday: Tbilisi Corner on Harbour Road, Sara?\n"
    '[19:31] Tomas Reyes: Or Kumo Ramen? Happy to watch "Overwatch 3" after.\n'
    "[19:32] Sara Lindqvist: Georgian please! Tbilisi Corner it is.\n"
)


def test_names_are_runs_of_capitals_quoted_titles_and_words_inside_a_sentence() -> None:
    assert names_in("Supper club on Friday: Tbilisi Corner on Harbour Road, Sara?") == [
        "Tbilisi Corner",
        "Harbour Road",
        "Sara",
    ]
    # ... but a lone capitalised word opening a sentence may be any word
    assert names_in("On Harbour Road. Sara?") == ["Harbour Road"]
    assert names_in('Or Kumo Ramen? Happy to watch "Overwatch 3" after.') == [
        "Overwatch 3",
        "Kumo Ramen",
    ]
    # a sentence's first word, greetings, pronouns and calendar words name nothing
    assert names_in("Thanks! Sure, I'll come on Monday in March. Hey you.") == []
    assert names_in("I'm with Sara and Ingrid at Crumb & Co. today") == [
        "Sara",
        "Ingrid",
        "Crumb & Co",
    ]


def test_a_day_gives_its_writers_the_day_and_its_names_with_who_wrote_what() -> None:
    reply = plain_extraction(LINES, thread=THREAD, day="Monday 2026-03-02")
    kinds = {e["name"]: e["type"] for e in reply["entities"]}
    assert kinds["Ingrid Bakke"] == kinds["Tomas Reyes"] == PERSON
    assert kinds["Monday 2026-03-02"] == DATE
    assert kinds["Tbilisi Corner"] == kinds["Kumo Ramen"] == NAME
    # "Sara" is the day's writer Sara Lindqvist, not a name of her own
    assert "Sara" not in kinds
    pairs = {(r["source"], r["target"], r["keywords"]) for r in reply["relationships"]}
    assert ("Tomas Reyes", "Monday 2026-03-02", "wrote") in pairs
    assert ("Tbilisi Corner", "Monday 2026-03-02", "mentioned") in pairs
    assert ("Ingrid Bakke", "Sara Lindqvist", "wrote about") in pairs
    assert ("Tomas Reyes", "Kumo Ramen", "wrote about") in pairs
    assert ("Sara Lindqvist", "Tbilisi Corner", "wrote about") in pairs


def test_descriptions_do_not_change_from_day_to_day() -> None:
    # LightRAG keeps one of identical descriptions: no model summary of many days
    first = plain_extraction(LINES, thread=THREAD, day="Monday 2026-03-02")
    second = plain_extraction(LINES, thread=THREAD, day="Tuesday 2026-03-03")
    described = {e["name"]: e["description"] for e in first["entities"]}
    for entity in second["entities"]:
        if entity["name"] in described:
            assert entity["description"] == described[entity["name"]]


def test_a_chunk_without_the_caption_gives_its_writers_and_names_without_a_day() -> None:
    # the second chunk of a long day: no model is asked, whatever the chunk holds
    reply = plain_extraction("the bill.\n[19:30] Ingrid Bakke: Meet at Kumo Ramen, Tomas?")
    assert {e["name"] for e in reply["entities"]} == {"Ingrid Bakke", "Kumo Ramen", "Tomas"}
    assert {(r["source"], r["target"]) for r in reply["relationships"]} == {
        ("Ingrid Bakke", "Kumo Ramen"),
        ("Ingrid Bakke", "Tomas"),
    }
    assert plain_extraction("") == {"entities": [], "relationships": []}
