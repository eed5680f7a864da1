"""Hand-written thread-day transcripts for the graph engine's tests: named people,
places and dates across a one-to-one thread, a group chat and a family thread."""

from __future__ import annotations

from varagity.graph.types import ThreadDay


def _day(thread_id: str, name: str, span: str, lines: list[str]) -> ThreadDay:
    guids = tuple(f"{thread_id}-{span}-{i}" for i in range(len(lines)))
    return ThreadDay(
        thread_id=thread_id,
        thread_name=name,
        span=span,
        text="\n".join(lines),
        message_guids=guids,
        source="chat.db",
    )


MAYA_TRIP = _day(
    "iMessage;-;+14155550101",
    "Maya Chen",
    "2024-05-03",
    [
        "[09:12] Maya Chen: Sam, I finally booked the flights to Lisbon! TAP from SFO on June 14.",
        "[09:13] Sam: Amazing. How long are we staying in Lisbon?",
        "[09:15] Maya Chen: Four nights in Alfama, then the train to Porto on June 18.",
        "[09:16] Sam: I'll ask Tom Alvarez if he wants to meet us in Porto.",
        "[09:20] Maya Chen: Yes! Tom knows a great port cellar there, Graham's.",
    ],
)

HIKE_PLAN = _day(
    "iMessage;+;chat884120",
    "Hiking crew",
    "2024-05-04",
    [
        "[18:02] Tom Alvarez: Mount Tamalpais on Saturday May 11? Dipsea trail loop.",
        "[18:05] Priya Raman: I'm in. Can I bring my dog Biscuit?",
        "[18:06] Tom Alvarez: Of course. Meet at the Pantoll parking lot at 8am.",
        "[18:09] Sam: I'll drive Priya from Oakland and bring sandwiches.",
    ],
)

MAYA_HOTEL = _day(
    "iMessage;-;+14155550101",
    "Maya Chen",
    "2024-05-10",
    [
        "[21:40] Maya Chen: Hotel confirmed: Memmo Alfama in Lisbon, June 14 to June 18.",
        "[21:41] Sam: Perfect. Tom Alvarez says he will join us in Porto on June 18.",
        "[21:44] Maya Chen: Let's have dinner at Cervejaria Ramiro on our first night.",
    ],
)

MOM_VISIT = _day(
    "iMessage;-;+13105550177",
    "Mom",
    "2024-05-12",
    [
        "[10:00] Mom: Happy Mother's Day call was lovely, thank you Sam.",
        "[10:03] Mom: Aunt Rosa is visiting from Guadalajara on May 25.",
        "[10:05] Sam: I'll pick Aunt Rosa up at the San Jose airport.",
    ],
)

MOM_VISIT_EDITED = _day(
    "iMessage;-;+13105550177",
    "Mom",
    "2024-05-12",
    [
        "[10:00] Mom: Happy Mother's Day call was lovely, thank you Sam.",
        "[10:03] Mom: Aunt Rosa is visiting from Guadalajara on May 25.",
        "[10:07] Mom: Her flight lands in Sacramento now, not San Jose.",
        "[10:09] Sam: Then I'll drive to Sacramento to meet Aunt Rosa.",
    ],
)

BOOK_CLUB = _day(
    "iMessage;+;chat551903",
    "Book club",
    "2024-06-01",
    [
        "[19:30] Lena Fischer: Next book club is at my place on June 20, we read The Overstory.",
        "[19:32] Priya Raman: I'll buy copies at Green Apple Books on Clement Street.",
        "[19:35] Sam: Count me in, I'll bring a lemon tart.",
    ],
)

TOM_CAR = _day(
    "iMessage;-;+15595550123",
    "Tom Alvarez",
    "2024-06-02",
    [
        "[07:50] Tom Alvarez: My car broke down outside Fresno on Highway 99.",
        "[07:52] Sam: Stay put, I'm leaving Oakland now to pick you up.",
        "[07:53] Tom Alvarez: Thanks, I'm at the Chevron station on Herndon Avenue.",
    ],
)

#: The graph the engine tests share (three days: the 0.5B model takes minutes a day
#: on a busy 2-core machine).
GRAPH_DAYS = (MAYA_TRIP, HIKE_PLAN, MOM_VISIT)
