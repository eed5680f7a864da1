"""Quote-checked answers: units, values, the quote check, the stream and the context cut."""

from __future__ import annotations

from varagity.generation.answer import ABSTENTION
from varagity.generation.grounding import is_abstention
from varagity.generation.quotes import (
    EXTRACT_LEAD,
    QuoteChecker,
    QuotedAnswerStream,
    coverage_abstention,
    passage_units,
    select_context,
    values_of,
)
from varagity.generation.repetition import find_loop

KETTLE = (
    "## Warranty\n"
    "Every Tern K2 carries a warranty of 27 months from the date of purchase. The\n"
    "warranty covers the heating element and the electronics, but not the glass\n"
    "water window. Claims go to service@tern.example with the receipt.\n"
)
RATES = (
    "Per-diem rates by city:\n\n"
    "| City | Rate | Hotel cap |\n"
    "|---|---|---|\n"
    "| Lyon | 62 EUR | 140 EUR |\n"
    "| Porto | 48 EUR | 110 EUR |\n"
    "| Graz | 55 EUR | 120 EUR |\n"
)
WINTER = "Aurora station is staffed all year. The winter crew has 38 people.\n"
SOUP = "Red lentil soup keeps for 4 days in the fridge.\n- It freezes for 3 months.\n"


def _texts(text: str) -> list[str]:
    return [text[u.start : u.end] for u in passage_units(text)]


def test_units_are_sentences_rows_and_items_with_exact_offsets() -> None:
    assert _texts(KETTLE) == [
        "## Warranty",
        "Every Tern K2 carries a warranty of 27 months from the date of purchase.",
        "The\nwarranty covers the heating element and the electronics, but not the glass\n"
        "water window.",
        "Claims go to service@tern.example with the receipt.",
    ]
    assert _texts(RATES)[1:] == [
        "| City | Rate | Hotel cap |",
        "| Lyon | 62 EUR | 140 EUR |",
        "| Porto | 48 EUR | 110 EUR |",
        "| Graz | 55 EUR | 120 EUR |",
    ]
    assert _texts(SOUP) == [
        "Red lentil soup keeps for 4 days in the fridge.",
        "- It freezes for 3 months.",
    ]
    day = "Messages in Trip on 3 May:\n[09:14] Maya: We land at 7.\n[09:15] Li: Gate B2."
    assert _texts(day)[1:] == ["[09:14] Maya: We land at 7.", "[09:15] Li: Gate B2."]
    assert _texts("Dr. Mills signed it, e.g. on 1.2.2026. Then it ended.") == [
        "Dr. Mills signed it, e.g. on 1.2.2026.",
        "Then it ended.",
    ]


def test_values_are_numbers_codes_and_names_after_the_first_word() -> None:
    assert values_of("The Tern K2 has a warranty of 27 months [1].") == {"tern", "k2", "27"}
    assert values_of("Error E4 means 38,000 units at 02:00 in March.") == {
        "e4",
        "38000",
        "02:00",
        "march",
    }
    assert values_of("Velotec makes it.") == set()  # the first word is no name by itself
    assert values_of("Ask Aurora's desk.") == {"aurora"}


def test_a_sentence_whose_number_is_not_in_its_quote_has_no_quote() -> None:
    checker = QuoteChecker("How long is the warranty on the Tern K2?", [KETTLE, SOUP])
    [quote] = checker.quote("The Tern K2 has a warranty of 27 months.")
    assert quote.source == 1
    assert quote.text == KETTLE[quote.start : quote.end]
    assert "27 months" in quote.text
    assert checker.quote("The Tern K2 has a warranty of 24 months.") == []
    assert checker.quote("The warranty is 4 days.") == []  # 4 is the soup's, and off-topic
    assert checker.quote("The kettle is purple and made in Norway.") == []


def test_the_neighbouring_row_does_not_answer_for_an_item_it_does_not_name() -> None:
    question = "What is the per-diem rate in Lyon?"
    checker = QuoteChecker(question, [RATES])
    [right] = checker.quote("The per-diem rate in Lyon is 62 EUR.")
    assert right.text == "| Lyon | 62 EUR | 140 EUR |"
    # a row's words include its header's, and a lead-in naming the sources is no claim
    assert checker.quote("According to the sources, the hotel cap in Lyon is 140 EUR.")
    # a value from another column than the one the sentence names does not fit
    assert checker.quote("The hotel cap in Lyon is 62 EUR.") == []
    # the rate of a neighbouring row: its row does not name Lyon, Lyon's row lacks 48
    assert checker.quote("The per-diem rate in Lyon is 48 EUR.") == []
    assert checker.quote("The per-diem rate in Lyon is €48.") == []
    # a city the table does not list: no quote, whatever value is stated
    unlisted = QuoteChecker("What is the per-diem rate in Turin?", [RATES])
    assert unlisted.quote("The per-diem rate in Turin is 55 EUR.") == []
    # what names the table (its file) counts for a row, as the headings do for prose
    named = QuoteChecker("What is the Porto rate in the Leeds policy?", [RATES], ["leeds/rates.md"])
    assert [q.text for q in named.quote("The rate is 48 EUR.")] == ["| Porto | 48 EUR | 110 EUR |"]


def test_a_value_must_sit_in_the_sentence_after_its_subject_or_with_it() -> None:
    prose = (
        "The station runs on a microgrid with a peak output of 4.2 megawatts. A diesel "
        "generator covers the polar night. It was installed in 2019."
    )
    checker = QuoteChecker("When was the diesel generator installed?", [prose])
    # the subject named in one sentence, its value in the next: one quote of both
    [quote] = checker.quote("The diesel generator was installed in 2019.")
    assert quote.text == "A diesel generator covers the polar night. It was installed in 2019."
    # a value before the subject's sentence is not the subject's: that sentence lacks
    # the "diesel generator" its passage names after it (it is the microgrid's)
    other = QuoteChecker("What is the output of the diesel generator?", [prose])
    assert other.quote("The diesel generator has an output of 4.2 megawatts.") == []


def test_a_sentence_joining_two_facts_rests_on_two_quotes() -> None:
    checker = QuoteChecker("How much and when?", [SOUP])
    quotes = checker.quote("The soup keeps 4 days in the fridge and freezes for 3 months.")
    assert [q.text for q in quotes] == [
        "Red lentil soup keeps for 4 days in the fridge.",
        "- It freezes for 3 months.",
    ]


def _stream(answer: str, question: str, passages: list[str]) -> tuple[QuotedAnswerStream, str]:
    stream = QuotedAnswerStream(
        question, passages, [("kettle.md", "Warranty"), ("soup.md", "")], ABSTENTION
    )
    shown = "".join(stream.feed(answer[i : i + 3]) for i in range(0, len(answer), 3))
    return stream, shown + stream.finish()


def test_the_stream_drops_unquoted_sentences_and_cites_the_quoted_ones() -> None:
    answer = "The warranty lasts 27 months [2]. It covers 99 spare parts. The soup keeps 4 days."
    stream, shown = _stream(answer, "How long do the warranty and the soup last?", [KETTLE, SOUP])
    assert shown == stream.text == "The warranty lasts 27 months [1]. The soup keeps 4 days [2]."
    assert stream.dropped == ["It covers 99 spare parts."]
    assert [q.source for q in stream.quotes] == [1, 2]
    # a sentence about what the question did not ask (the soup, not the Tern K2) has none
    stream, shown = _stream(answer, "How long is the Tern K2 warranty?", [KETTLE, SOUP])
    assert shown == "The warranty lasts 27 months [1]."


def test_nothing_is_shown_of_a_sentence_before_it_is_checked() -> None:
    stream = QuotedAnswerStream("How long?", [KETTLE], [], ABSTENTION)
    assert stream.feed("The warranty lasts 27 mon") == ""
    assert stream.feed("ths. More") == "The warranty lasts 27 months [1]."


def test_an_answer_with_no_checked_sentence_abstains_naming_what_the_passages_cover() -> None:
    stream, shown = _stream("The K2 costs 99 EUR.", "What does the K2 cost?", [KETTLE, SOUP])
    assert shown == stream.text
    assert is_abstention(shown) and "99" not in shown
    assert shown == f"{ABSTENTION} The passages found cover kettle.md (Warranty) and soup.md."
    assert stream.quotes == [] and stream.dropped == ["The K2 costs 99 EUR."]
    assert values_of("It costs €29, or 5% more.") == {"29", "5"}
    # the model's own abstention takes the same form, and is not an unquoted claim
    stream, shown = _stream(ABSTENTION, "What does the K2 cost?", [KETTLE, SOUP])
    assert shown.startswith(ABSTENTION) and stream.dropped == [] and stream.abstained


def test_an_abstention_offers_the_passage_closest_to_the_question() -> None:
    # the neighbouring row's figure is dropped; the row the question names is offered,
    # labelled with its header, and quoted verbatim for the evidence card
    question = "What is the hotel cap in Porto?"
    stream, shown = _stream("The hotel cap in Porto is 140 EUR.", question, [RATES, SOUP])
    assert stream.dropped == ["The hotel cap in Porto is 140 EUR."] and stream.extracted
    assert shown == (
        f"{EXTRACT_LEAD} The passage closest to the question [1]: "
        "“City: Porto; Rate: 48 EUR; Hotel cap: 110 EUR”"
    )
    assert is_abstention(shown)
    [quote] = stream.quotes
    assert quote.text == "| Porto | 48 EUR | 110 EUR |" == RATES[quote.start : quote.end]
    # a city no row names gets no row: the plain abstention
    faro = "What is the hotel cap in Faro?"
    stream, shown = _stream("The hotel cap in Faro is 140 EUR.", faro, [RATES])
    assert shown.startswith(ABSTENTION) and not stream.extracted and stream.quotes == []
    # nor does a question whose only words in the passages name the item
    assert QuoteChecker("What does the Tern K2 weigh?", [KETTLE]).extract() is None


def test_the_context_keeps_the_matching_units_their_neighbours_and_the_table_header() -> None:
    long_kettle = "Intro line one.\n\n" + "Filler sentence number %d.\n\n" * 30 % tuple(range(30))
    passages = [long_kettle + KETTLE, RATES, SOUP]
    cut = select_context("What is the per-diem rate in Porto?", passages, max_tokens=60)
    assert len(cut) == 3
    assert "| Porto | 48 EUR | 110 EUR |" in cut[1]
    assert "| City | Rate | Hotel cap |" in cut[1]  # the header row comes with it
    assert len(cut[0]) < len(passages[0]) / 4 and "..." in cut[0]
    whole = select_context("What is the per-diem rate in Porto?", passages, max_tokens=10_000)
    assert "| Graz | 55 EUR | 120 EUR |" in whole[1]


def test_the_stream_gives_up_after_sentences_in_a_row_without_a_quote() -> None:
    stream = QuotedAnswerStream("How long?", [KETTLE], [], ABSTENTION)
    stream.feed("The warranty lasts 27 months. Step 1 is 5. Step 2 is 6. ")
    assert not stream.gave_up  # a checked sentence came first: two misses so far
    stream.feed("Step 3 is 7. More")
    assert stream.gave_up
    assert stream.finish() == "" and stream.text == "The warranty lasts 27 months [1]."


def test_simple_tables_and_underlined_titles_are_rows_and_headings() -> None:
    rst = (
        "Leeds office\n------------\n\n"
        "========  =========  =====\nTeam      Extension  Floor\n========  =========  =====\n"
        "Payroll   2240       2\nFinance   2251       -\n========  =========  =====\n"
    )
    units = passage_units(rst)
    assert [(rst[u.start : u.end].split()[0], u.kind) for u in units] == [
        ("Leeds", "heading"),
        ("Team", "row"),
        ("Payroll", "row"),
        ("Finance", "row"),
    ]
    cut = select_context("Which extension has Payroll?", [rst], max_tokens=20)
    # the row comes with its header row, each on a line of its own
    assert "Team      Extension  Floor\nPayroll   2240       2" in cut[0]
    # a row's scope is its header and its section's heading: the Leeds row is not Rotterdam's
    checker = QuoteChecker("What is the Rotterdam extension for Payroll?", [rst])
    assert checker.quote("The Rotterdam extension for Payroll is 2240.") == []
    assert QuoteChecker("What is the Leeds extension for Payroll?", [rst]).quote(
        "The Leeds extension for Payroll is 2240."
    )


def test_a_number_the_question_names_may_fall_in_a_range_of_the_row() -> None:
    table = (
        "## Annual leave days\n\n| Service | Leeds | Rotterdam |\n|---|---|---|\n"
        "| 0–5 years | 25 | 24 |\n| 6–9 years | 28 | 26 |\n| 10+ years | 30 | 27 |\n"
    )
    question = "How many leave days does a Rotterdam employee with 12 years get?"
    checker = QuoteChecker(question, [table])
    [quote] = checker.quote("In Rotterdam, 12 years of service give 27 days of leave.")
    assert quote.text == "| 10+ years | 30 | 27 |"
    # the neighbouring row holds a Rotterdam figure too, but 12 is not in its range
    assert checker.quote("In Rotterdam, 12 years of service give 26 days of leave.") == []
    # and the Leeds column of the right row is not what the sentence names
    assert checker.quote("In Rotterdam, 12 years of service give 30 days of leave.") == []


def test_a_named_column_with_an_empty_cell_holds_no_value_to_borrow() -> None:
    table = "## Extensions\n| Team | Leeds | Rotterdam |\n|---|---|---|\n| Finance | 2251 | — |\n"
    checker = QuoteChecker("What is the extension for Finance?", [table])
    assert checker.quote("The Rotterdam extension for Finance is 2251.") == []
    assert checker.quote("The Leeds extension for Finance is 2251.")


def test_a_lead_in_naming_the_sources_is_no_claim() -> None:
    checker = QuoteChecker("How many people winter at the station?", [WINTER])
    assert checker.quote(
        "According to the information provided in sources 1 and 2, there are 38 people in "
        "the winter crew."
    )


def test_a_value_in_the_clause_of_another_item_is_that_item_s() -> None:
    memo = (
        "PS: the fire alarm test is every Wednesday at 11:00 in Leeds and every Monday at\n"
        "10:00 in Rotterdam. If you hear the alarm at any other time, leave.\n"
    )
    checker = QuoteChecker("When is the weekly fire alarm test in Rotterdam?", [memo])
    assert checker.quote("The fire alarm test in Rotterdam is every Wednesday at 11:00.") == []
    [quote] = checker.quote("The fire alarm test in Rotterdam is every Monday at 10:00.")
    assert quote.text.startswith("PS: the fire alarm test")
    # a sentence that names both items itself says which value is whose
    assert checker.quote(
        "The test is on Wednesday at 11:00 in Leeds and on Monday at 10:00 in Rotterdam."
    )


def test_the_first_word_of_each_sentence_and_function_words_are_no_names() -> None:
    assert values_of("My door badge broke. Who gives me a new one?") == set()
    assert values_of("How long is an IT ticket open in May?") == {"may"}


def test_a_row_speaks_with_the_words_that_name_its_passage() -> None:
    rates = (
        "| City | Country | Rate |\n|---|---|---|\n| Hamburg | DE | €49 |\n| Leeds | UK | £38 |\n"
    )
    question = "What is the daily allowance in Hamburg?"
    sentence = "The daily allowance in Hamburg is €49."
    # the row says nothing of daily allowances; the section it stands in does
    assert QuoteChecker(question, [rates]).quote(sentence) == []
    named = QuoteChecker(question, [rates], ["travel.md Travel policy > Daily allowances"])
    [quote] = named.quote(sentence)
    assert quote.text == "| Hamburg | DE | €49 |"
    assert named.quote("The daily allowance in Hamburg is £38.") == []


def test_a_wrapped_list_item_is_one_unit_and_a_month_asked_names_no_item() -> None:
    mileage = (
        "## Mileage\n"
        "- Until 31 October 2025: 45p per mile; €0.21 per km\n"
        "in the Netherlands.\n"
        "- From 1 November 2025: 48p per mile; €0.23 per km in the Netherlands.\n"
    )
    assert _texts(mileage)[1] == (
        "- Until 31 October 2025: 45p per mile; €0.21 per km\nin the Netherlands."
    )
    checker = QuoteChecker(
        "What was the mileage rate in the Netherlands before November 2025?", [mileage]
    )
    [quote] = checker.quote("Before November 2025 the rate in the Netherlands was €0.21 per km.")
    assert quote.text.startswith("- Until 31 October 2025")


def test_a_quote_of_a_paragraph_about_something_else_answers_nothing() -> None:
    shoes = (
        "## Safety footwear\nThe company pays for one pair a year, up to £85 in Leeds.\n\n"
        "## Door badges\nLost badges are replaced by Facilities (ext. 2217).\n"
    )
    checker = QuoteChecker("My door badge broke. Who gives me a new one?", [shoes])
    assert checker.quote("The company pays for one pair a year, up to £85 in Leeds.") == []
    assert checker.quote("Lost badges are replaced by Facilities (ext. 2217).")


def test_a_number_the_question_names_counts_only_beside_its_own_words() -> None:
    notice = (
        "| Stage | Trial period | Notice |\n|---|---|---|\n"
        "| Interns | 6 months | 1 week |\n"
        "| Bands 5–7 | 3 months | 10 weeks |\n"
    )
    checker = QuoteChecker("How much notice is given on band 6?", [notice])
    # "6 months" is the interns' trial period, not band 6
    assert checker.quote("The notice on band 6 is 1 week.") == []
    [quote] = checker.quote("The notice on band 6 is 10 weeks.")
    assert quote.text.startswith("| Bands 5–7")
    # a number the question spells out is the same number
    service = "| Service | Days off |\n|---|---|\n| 0–4 years | 20 |\n| 5–9 years | 23 |\n"
    spelled = QuoteChecker("I have worked here seven years. How many days off do I get?", [service])
    assert spelled.quote("You get 20 days off.") == []
    assert spelled.quote("You get 23 days off.")


def test_an_amount_or_a_percentage_must_be_one_in_its_quote() -> None:
    card = "| model | price_gbp | warranty_months |\n|---|---|---|\n| Vista 27 | 249 | 36 |\n"
    checker = QuoteChecker("What is the price of a Vista 27?", [card])
    assert checker.quote("The price of a Vista 27 is £36.") == []
    assert checker.quote("The price of a Vista 27 is £249.")
    fee = "Care+ costs 29 euros and adds 24 months to the warranty."
    care = QuoteChecker("What does Care+ cost?", [fee])
    assert care.quote("Care+ costs €24.") == []
    assert care.quote("Care+ costs €29.")
    pension = "The employer adds 6% of salary after 3 months of service."
    assert (
        QuoteChecker("What does the employer add?", [pension]).quote(
            "The employer adds 3% of salary."
        )
        == []
    )


def test_a_sentence_that_restates_the_question_answers_nothing() -> None:
    drill = "On a fire alarm in Rotterdam, assemble at gate 3 by the canal.\n"
    checker = QuoteChecker(
        "Where do we assemble in Rotterdam when the fire alarm goes off?", [drill]
    )
    assert checker.quote("Rotterdam, where the fire alarm goes off.") == []
    assert checker.quote("You assemble at gate 3 by the canal.")
    # a denial is something the question did not say
    ban = "Personal heaters are not allowed in the Rotterdam office.\n"
    asked = QuoteChecker("Are personal heaters allowed in the Rotterdam office?", [ban])
    assert asked.quote("Personal heaters are not allowed in the Rotterdam office.")


def test_how_many_is_answered_by_any_number_word() -> None:
    day = "[18:02] Maya: We sold fifteen jars of the plum jam at the Sunday market!"
    jars = QuoteChecker("How many jars of plum jam did Maya sell at the market?", [day])
    # the amount spelled as the message spells it (thirteen to nineteen were no amount)
    assert jars.quote("Maya sold fifteen jars of plum jam at the market.")
    # a sentence without an amount answers no "how many"
    assert jars.quote("Maya sold plum jam at the Sunday market.") == []


def test_a_value_claimed_for_the_neighbour_does_not_answer_for_the_item() -> None:
    drill = (
        "4) Timing\n"
        "   Everybody must be out within 4 minutes in Leeds and within\n"
        "   6 minutes in Rotterdam (the warehouse is bigger). Last year's best was 5 min\n"
        "   in Leeds.\n"
    )
    checker = QuoteChecker("Within how many minutes must the Leeds building be evacuated?", [drill])
    # (the next sentence naming Leeds does not make the 6 minutes Leeds's)
    assert checker.quote("Within 6 minutes in Rotterdam.") == []
    assert checker.quote("The Leeds building must be empty within 6 minutes.") == []
    assert checker.quote("Within 4 minutes.")
    # naming both items, a sentence says which value is whose
    assert checker.quote("Within 4 minutes in Leeds and 6 minutes in Rotterdam.")
    # a sentence after one naming the item goes on about it, unless it names a peer
    day = "[09:12] Maya: I booked the flights to Lisbon! TAP from SFO on June 14."
    flights = QuoteChecker("When does Maya fly to Lisbon?", [day])
    assert flights.quote("Maya flies to Lisbon on June 14.")
    assert flights.quote("Maya flies TAP from SFO on June 14.")
    test = "The alarm test is at 11:00 in Leeds. In Rotterdam it is at 10:00."
    alarm = QuoteChecker("When is the alarm test in Leeds?", [test])
    assert alarm.quote("The alarm test in Leeds is at 10:00.") == []
    assert alarm.quote("The alarm test in Leeds is at 11:00.")


def test_the_closest_passage_to_a_question_after_a_figure_states_one() -> None:
    memo = (
        "The weekly fire alarm test runs every Monday at 10:00 in Rotterdam. "
        "If the fire alarm sounds at any other time or day, it is not the weekly test.\n"
    )
    checker = QuoteChecker(
        "On which day and time is the weekly fire alarm test in Rotterdam?", [memo]
    )
    # the warning holds more of the question's words, but no day and no time
    extract = checker.extract()
    assert extract is not None and "Monday at 10:00" in extract[1]
    # a list item is shown without its number (which reads as a sentence's end), and
    # its quote still spans the item as written
    decisions = "Decisions\n3. Firmware 4.2 for the LR-7 ships on 27 April.\n"
    quote, shown = QuoteChecker(
        "When does firmware 4.2 for the LR-7 ship?", [decisions]
    ).extract() or (None, "")
    assert shown == "Firmware 4.2 for the LR-7 ships on 27 April."
    assert quote is not None and quote.text.startswith("3. Firmware")


def test_a_list_item_speaks_with_the_sentence_that_introduces_its_list() -> None:
    mileage = (
        "Private car mileage is paid per mile (UK) or kilometre (NL):\n\n"
        "- Until 31 October 2025: 45p per mile; €0.21 per km in the Netherlands.\n"
        "- From 1 November 2025: 48p per mile; €0.23 per km in the Netherlands.\n"
    )
    checker = QuoteChecker("What is the kilometre rate in the Netherlands?", [mileage])
    # the items say "km"; the sentence above them says what they rate
    [quote] = checker.quote("The kilometre rate in the Netherlands is €0.23.")
    assert quote.text.startswith("- From 1 November 2025")


def test_a_unit_on_the_other_side_of_the_date_asked_about_is_not_about_it() -> None:
    leave = (
        "Until 31 March 2025 the carry-over limit was 5 unused days. "
        "From 1 April 2025 the carry-over limit is 8 days.\n"
    )
    checker = QuoteChecker("What was the carry-over limit before the April 2025 change?", [leave])
    assert checker.quote("The carry-over limit was 8 days.") == []
    assert checker.quote("The carry-over limit was 5 unused days.")
    extract = checker.extract()
    assert extract is not None and "5 unused days" in extract[1]
    later = QuoteChecker("What is the carry-over limit since April 2025?", [leave])
    assert later.quote("The carry-over limit is 8 days.")


def test_words_match_by_their_stem() -> None:
    drill = "2) Assembly points\n   Rotterdam: gate 3 by the canal.\n"
    checker = QuoteChecker("Where do we assemble in Rotterdam?", [drill])
    extract = checker.extract()
    assert extract is not None and "gate 3" in extract[1]


def test_a_passage_names_its_subject_once_at_the_top() -> None:
    policy = (
        "# Service\n"
        "Tern repairs its appliances at one service centre on Kalevantie 17 in Tampere. "
        "Repairs under warranty take 10 working days at the centre.\n"
        "Heron appliances go back to the shop instead.\n"
    )
    question = "How long do warranty repairs take at the Tern service centre?"
    checker = QuoteChecker(question, [policy])
    # the repairs sentence names no item of its own: it speaks of Tern, named above
    assert checker.quote("Warranty repairs take 10 working days.")
    # a sentence naming an item of its own speaks of that one
    assert (
        QuoteChecker("Where do Tern appliances go for repair?", [policy]).quote(
            "They go back to the shop."
        )
        == []
    )
    # for "how long", the closest passage states a duration, not a street number
    extract = checker.extract()
    assert extract is not None and "10 working days" in extract[1]


POWER = (
    "## Power\n"
    "The station runs on a hybrid microgrid: three wind turbines and a battery bank\n"
    "deliver a combined peak output of 4.2 megawatts. A diesel generator covers the\n"
    "polar night when the turbines ice over.\n"
)


def test_a_unit_without_a_term_of_the_question_that_its_passage_gives_another_is_not_about_it() -> (
    None
):
    asked = QuoteChecker("What is the power output of the diesel generator?", [POWER])
    assert asked.quote("The power output of the diesel generator is 4.2 megawatts.") == []
    microgrid = QuoteChecker("What is the peak output of the microgrid?", [POWER])
    (quote,) = microgrid.quote("The microgrid delivers a peak output of 4.2 megawatts.")
    assert "4.2 megawatts" in quote.text
    # the unit naming the generator stays the closest passage
    closest = asked.extract()
    assert closest is not None and "diesel generator covers" in closest[1]


def test_an_abstention_names_each_file_once_with_its_sections() -> None:
    topics = [("policy.md", "Mileage"), ("policy.md", "Daily allowances"), ("policy.md", "")]
    shown = coverage_abstention([*topics, ("rates.csv", ""), ("policy.md", "Mileage")], "No.")
    assert (
        shown == "No. The passages found cover policy.md (Mileage; Daily allowances) and rates.csv."
    )
    # naming one file three times read as a loop of the answer
    assert find_loop(coverage_abstention(topics, ABSTENTION)) is None


def test_a_figure_for_a_measure_the_question_names_is_one_of_its_units() -> None:
    passage = (
        "A new test rig for the LR-7 robot arm is approved with a budget of 38,000 euros.\n"
        "The LR-7 robot arm lifts a maximum payload of 7 kg.\n"
    )
    checker = QuoteChecker("What is the maximum payload of the LR-7 robot arm?", [passage])
    assert checker.quote("The maximum payload of the LR-7 robot arm is 38,000 euros.") == []
    (quote,) = checker.quote("The LR-7 robot arm has a maximum payload of 7 kg.")
    assert quote.text.startswith("The LR-7 robot arm lifts")


def test_a_day_of_the_month_is_the_same_day_written_as_an_ordinal() -> None:
    day = (
        "[19:30] Ingrid: Supper club idea for next Friday, the 13th: Tbilisi Corner.\n"
        "[19:31] Tomas: Or Kumo Ramen on the 20th?\n"
    )
    checker = QuoteChecker("Which restaurant did the supper club pick for Friday, March 13?", [day])
    [quote] = checker.quote("The supper club picked Tbilisi Corner.")
    assert "the 13th" in quote.text
    assert checker.quote("The supper club picked Kumo Ramen.") == []
    ordinal = QuoteChecker(
        "Where is the supper club on the 13th?", ["On March 13 it is at Tbilisi Corner."]
    )
    assert ordinal.quote("It is at Tbilisi Corner.")


# --- message-graph day cards ------------------------------------------------------------

_SUPPER = (
    "Messages in Ingrid Bakke on Saturday 2026-03-14:\n"
    "[10:15] Ingrid Bakke: What a night! The khachapuri was the best thing this year.\n"
    "[10:16] Noor Haddad: Agreed. How much was the bill in the end?\n"
    "[10:17] Ingrid Bakke: 131 euros for the four of us with the wine, so 33 each, rounded.\n"
)
_RIDE = (
    "Messages in Tomas Reyes on Friday 2026-03-06:\n"
    "[18:00] Tomas Reyes: Ride tomorrow (Saturday 2026-03-07)? The lighthouse at Hook Point.\n"
    "[18:01] Noor Haddad: Yes! What time?\n"
    "[18:02] Tomas Reyes: 9:00 at the bridge. After the flat tyre I bought new tyres, 74 euros.\n"
)
_POTLUCK = (
    "Messages in Ingrid Bakke, Sara Lindqvist, Tomas Reyes on Wednesday 2026-03-25:\n"
    "[20:00] Sara Lindqvist: Potluck at my place on Saturday at 19:00? I'm on the 3rd floor.\n"
    "[20:01] Noor Haddad: Lovely idea, Sara. I'll bring lentil soup.\n"
    "[20:02] Ingrid Bakke: Cardamom buns from me.\n"
)
_DAYS = [_SUPPER, _RIDE, _POTLUCK]


def test_a_reply_answers_the_question_of_the_message_before_it() -> None:
    checker = QuoteChecker("How much was Noor's share of the bill Ingrid paid?", _DAYS)
    # "33 each" in a message about euros, answering "How much was the bill?"
    [quote] = checker.quote("Noor's share of the bill was 33 euros.")
    assert quote.text.startswith("[10:17] Ingrid Bakke: 131 euros")
    assert checker.quote("Noor's share of the bill was 74 euros.") == []


def test_a_message_is_its_writers_and_a_group_message_no_one_elses() -> None:
    checker = QuoteChecker("What is Ingrid bringing to Sara's potluck?", _DAYS)
    assert checker.quote("Ingrid is bringing cardamom buns to Sara's potluck.")
    # Noor wrote "I'll bring lentil soup": naming Sara does not make it Ingrid's
    assert checker.quote("Ingrid is bringing lentil soup to Sara's potluck.") == []
    floor = QuoteChecker("On which floor does Ingrid live?", _DAYS)
    # the group's first line names Ingrid; Sara's "I'm on the 3rd floor" is Sara's
    assert floor.quote("Ingrid lives on the 3rd floor.") == []
    tyres = QuoteChecker("How much did Tomas pay for new tyres?", _DAYS)
    # the clause naming the writer is no clause of another person's: "I bought" is his
    assert tyres.quote("Tomas paid 74 euros for new tyres.")


def test_a_message_is_dated_by_its_day_unless_it_names_a_day_of_its_own() -> None:
    checker = QuoteChecker("On which day did Noor and Tomas ride to Hook Point?", _DAYS)
    assert checker.quote("Noor and Tomas rode to Hook Point on Saturday 2026-03-07.")
    # the day the ride was planned is not the day of the ride, nor is the reply's
    assert checker.quote("Noor and Tomas rode to Hook Point on Friday 2026-03-06.") == []
    asked = QuoteChecker("When did Tomas ask about the bridge?", _DAYS)
    assert asked.quote("Tomas asked about the bridge on Friday 2026-03-06.")
    # the ride planned in the conversation's first message is on the day it names: the
    # later messages were written the day before, and say nothing of another day
    meet = QuoteChecker("When do Noor and Tomas meet at the bridge?", _DAYS)
    assert meet.quote("Noor and Tomas meet at the bridge at 9:00 on Saturday 2026-03-07.")
    assert meet.quote("Noor and Tomas meet at the bridge at 9:00 on Friday 2026-03-06.") == []


def test_a_handle_written_joined_is_the_name_the_transcript_spaces() -> None:
    checker = QuoteChecker("What did NoorHaddad ask about the bill?", _DAYS)
    assert checker.quote("NoorHaddad asked how much the bill was in the end.")
    # a short run of letters is no name: "ta" is not joined "t a"
    assert not QuoteChecker("Where is Tbi?", _DAYS).quote("Tbi is at Tbilisi Corner.")


_BAKERY = (
    "Messages in Hailey Johnson on Friday 2026-05-08:\n"
    "[08:00] Hailey Johnson: It's Mother's Day this weekend! 15% off all pastries.\n"
    "[08:01] Li Hua: Nice! What's your top recommendation?\n"
    "[08:02] Hailey Johnson: The raspberry croissants and the chocolate eclairs.\n"
    "[11:30] Hailey Johnson: The new sourdough is out of the oven, by the way.\n"
    "[11:31] Li Hua: Save me the rye loaf, please.\n"
)


def test_a_message_is_about_the_topic_that_opened_its_conversation() -> None:
    checker = QuoteChecker("Which two pastries does Hailey recommend for Mother's Day?", [_BAKERY])
    # "Mother's Day" was named two messages before the recommendation, in the same talk
    [quote] = checker.quote("Hailey recommends the raspberry croissants and chocolate eclairs.")
    assert quote.text.startswith("[08:02]")
    # a conversation hours later is another: its loaf was never a Mother's Day pick
    assert checker.quote("Hailey recommends the rye loaf for Mother's Day.") == []


def test_a_message_on_its_conversations_topic_still_holds_what_is_asked_of_it() -> None:
    grant = (
        "Messages in Dev Patel on Monday 2026-03-09:\n"
        "[12:30] Dev Patel: Could you review the slides for the Harbor grant proposal?\n"
        "[12:31] Noor Haddad: Sure. How much are we asking for?\n"
        "[12:32] Dev Patel: 45,000 euros over two years.\n"
    )
    asking = QuoteChecker("How much is Dev asking for in the Harbor proposal?", [grant])
    [quote] = asking.quote("Dev is asking for 45,000 euros for the Harbor proposal.")
    assert quote.text.startswith("[12:32]")
    # nobody in the talk was awarded anything: the amount asked for is no award
    awarded = QuoteChecker("How much was Dev's team awarded for the Harbor proposal?", [grant])
    assert awarded.quote("Dev's team was awarded 45,000 euros for the Harbor proposal.") == []


def test_a_message_answers_only_what_its_conversation_speaks_of() -> None:
    party = (
        "Messages in Wolfgang Schulz on Monday 2026-02-16:\n"
        "[09:30] Wolfgang Schulz: Happy Lunar New Year, buddy!\n"
        "[09:31] Li Hua: Thanks! Any traditions you're looking forward to?\n"
        "[09:32] Wolfgang Schulz: Mostly good food. Maybe I'll make dumplings this year!\n"
    )
    food = QuoteChecker("What is Wolfgang looking forward to at Lunar New Year?", [party])
    assert food.quote("Wolfgang is looking forward to good food and dumplings.")
    # nobody played anything: the sentence repeats the question's "play" and "games"
    games = QuoteChecker("What games did Wolfgang play with Li Hua at Lunar New Year?", [party])
    assert games.quote("Wolfgang played games with Li Hua with dumplings.") == []


def test_the_rest_of_a_full_name_the_question_gives_adds_nothing() -> None:
    checker = QuoteChecker("Who is joining Noor and Tomas on the ride?", _DAYS)
    assert checker.quote("Noor Haddad is joining Noor and Tomas on the ride.") == []


def test_a_day_card_keeps_its_first_line_and_the_reply_to_its_best_message() -> None:
    long_day = _SUPPER + "".join(
        f"[11:{n:02d}] Ingrid Bakke: Another note about the weather and the walk home, {n}.\n"
        for n in range(20)
    )
    shown = select_context(
        "How much was the bill?", [long_day, _RIDE], max_tokens=80, conversation=True
    )
    assert shown[0].startswith("Messages in Ingrid Bakke on Saturday 2026-03-14:")
    assert "How much was the bill" in shown[0] and "so 33 each" in shown[0]
    assert shown[1].startswith("Messages in Tomas Reyes on Friday 2026-03-06:")


def test_how_much_is_answered_by_an_amount() -> None:
    day = "[09:01] Kofi: For the light I'll send Lotte, an electrician I trust.\n"
    checker = QuoteChecker("How much did the electrician charge for the light?", [day])
    assert checker.quote("The electrician charged for the light at Lotte, an electrician.") == []
    free = QuoteChecker(
        "How much does the repair cost?", ["[09:02] Kofi: The repair is free, I pay it."]
    )
    assert free.quote("The repair is free.")


def test_a_detail_the_model_added_is_trimmed_off_a_sentence_whose_head_is_quoted() -> None:
    question = "What time do Noor and Tomas meet at the bridge?"
    answer = "Tomas and Noor meet at the bridge at 9:00 on Monday, April 6."
    stream = QuotedAnswerStream(question, _DAYS, [], ABSTENTION)
    shown = stream.feed(answer) + stream.finish()
    assert shown == stream.text == "Tomas and Noor meet at the bridge at 9:00 [2]."
    assert stream.quotes[0].text.startswith("[18:02] Tomas Reyes: 9:00 at the bridge.")
    assert stream.dropped == ["on Monday, April 6."]
    # a head that only repeats the question answers nothing: the whole answer abstains
    stream = QuotedAnswerStream(question, _DAYS, [], ABSTENTION)
    stream.feed("Noor and Tomas meet at the bridge on Monday, April 6.")
    assert is_abstention(stream.finish())
    assert stream.sentences == 0


def test_a_clock_time_is_one_value_however_its_am_or_pm_is_written() -> None:
    outage = (
        "Messages in Adam Smith on Monday 2026-05-04:\n"
        "[09:00] Adam Smith: Heads up, the power outage in our street is from 2 PM to 3 P.M."
    )
    # a power outage asks for no figure in watts
    checker = QuoteChecker("When is the power outage in the street?", [outage])
    assert values_of("It is from 2 PM to 3 p.m.") == {"2 pm", "3 pm"}
    assert checker.quote("The power outage is from 2pm to 3pm.")
    assert checker.quote("The power outage is from 2 p.m. to 3 PM.")
    assert checker.quote("The power outage is from 4pm to 5pm.") == []


_SHOW = (
    "Messages in Emily Burnett on Tuesday 2026-06-02:\n"
    "[12:05] Li Hua: The episode where they all dress up as superheroes is a classic!\n"
    "[12:06] Emily Burnett: I think Leonard really stands out for me! Who's yours?\n"
    "[12:07] Li Hua: Spider-Man, always. The web-slinging never gets old.\n"
)
_HOBBY = (
    "Messages in Wolfgang Schulz on Thursday 2026-07-30:\n"
    "[18:00] Wolfgang Schulz: Hey Li Hua! We could pick up a new hobby together. "
    "How about pottery or painting?\n"
    "[18:01] Li Hua: Pottery sounds fun, let's try it on 20260808!\n"
)


def test_a_persons_view_is_their_own_message_or_one_naming_them() -> None:
    checker = QuoteChecker("What is LiHua's favorite superhero?", [_SHOW])
    # "LiHua" is the "Li Hua" who wrote the message; Emily's pick is hers
    assert checker.quote("LiHua's favorite superhero is Spider-Man.")
    assert checker.quote("LiHua's favorite superhero is Leonard.") == []
    thinks = QuoteChecker("Which character does Emily Burnett think stands out?", [_SHOW])
    assert thinks.quote("Emily Burnett thinks Leonard stands out.")
    assert thinks.quote("Emily Burnett thinks Spider-Man stands out.") == []


def test_how_a_message_was_written_is_no_word_its_conversation_must_hold() -> None:
    # "proposes" is the question's word for "How about ...?"
    checker = QuoteChecker("What new hobbies does Wolfgang Schulz propose to Li Hua?", [_HOBBY])
    assert checker.quote("Wolfgang Schulz proposes to Li Hua to try pottery or painting.")


def test_who_asked_of_a_chat_is_answered_by_a_person() -> None:
    checker = QuoteChecker("Who suggests a new hobby to LiHua?", [_HOBBY])
    assert checker.quote("Wolfgang Schulz suggests a new hobby to LiHua.")
    # naming only the one the question names answers nothing
    assert checker.quote("Li Hua is suggested a new hobby: pottery or painting.") == []


def test_a_day_written_without_dashes_is_the_same_day() -> None:
    checker = QuoteChecker("When does Li Hua plan to try pottery?", [_HOBBY])
    assert checker.quote("Li Hua plans to try pottery on 2026-08-08.")
    assert checker.quote("Li Hua plans to try pottery on 2026-08-09.") == []


_DINNER = (
    "Messages in Sam Okafor on Friday 2026-05-15:\n"
    "[19:02] Sam Okafor: Dinner at Thai Garden tonight? I'll get the pad thai and spring rolls.\n"
    "[19:05] Ana Reyes: Perfect, see you there at 8!\n"
)


def test_a_question_whose_premise_the_conversation_never_speaks_of_is_not_answered() -> None:
    meal = "Sam Okafor will get the pad thai and spring rolls."
    # no dessert, no anniversary, no party: the talk is of another thing
    party = QuoteChecker("What dessert will SamOkafor get for the anniversary party?", [_DINNER])
    assert party.quote(meal) == []
    # ... nor when the question frames its ask ("what type of") and says how it was planned
    typed = "What type of dessert does Sam Okafor plan to get at the anniversary party?"
    assert QuoteChecker(typed, [_DINNER]).quote(meal) == []
    # one word of the question may be the asker's own ("plan" of "I'll get")
    dinner = QuoteChecker("What did Sam Okafor plan to get at Thai Garden for dinner?", [_DINNER])
    assert dinner.quote(meal)
    # ... and a word framing the answer ("what exact time") is no premise
    when = QuoteChecker("What exact time is the dinner at Thai Garden?", [_DINNER])
    assert when.quote("The dinner at Thai Garden is at 8.")
    # a document is no conversation: its words are not the asker's to repeat
    menu = "The Thai Garden menu lists pad thai and spring rolls for dinner.\n"
    served = QuoteChecker("What dessert does Thai Garden list for an anniversary party?", [menu])
    assert served.quote("Thai Garden lists pad thai and spring rolls.")


def test_a_question_dated_by_the_day_is_answered_by_that_days_messages() -> None:
    # "on 20260730": the day's line dates every message of that day
    dated = QuoteChecker(
        "What hobbies does WolfgangSchulz propose to LiHua in their conversation on 20260730?",
        [_HOBBY],
    )
    assert dated.quote("Wolfgang Schulz proposes pottery or painting.")
    # another day's messages are not that day's
    other = QuoteChecker("What hobbies does WolfgangSchulz propose to LiHua on 20260731?", [_HOBBY])
    assert other.quote("Wolfgang Schulz proposes pottery or painting.") == []
