"""Render the OCR suite: page images with exact transcriptions, degraded as scanners and
phone cameras degrade them (``eval_suites/README.md``, "OCR suite").

    .venv/bin/python eval_suites/ocr/generate.py            # rewrites pages/, truth/, manifest

Every page is typeset here from text written for this suite (fictional letters, an
invoice, receipts, a form, a two-column newsletter, a timetable, a memo, a notice, a
recipe), at 150 dots per inch, with the DejaVu and Liberation fonts Debian installs
(``fonts-dejavu-core``, ``fonts-liberation``). The transcription of a page is the text
drawn on it, line by line in reading order: a table row is its cells left to right, a
two-column page its left column before its right one.

The degradations are deterministic (numpy's generator seeded with :data:`SEED` and the
page's number), so a rerun with the same Pillow, numpy and fonts writes the same files.
The images are committed; nothing at test time needs these fonts.

Kinds (a page may have several):

* ``clean``: the rendering as it is (grayscale PNG).
* ``blur``: Gaussian blur (a scanner out of focus, a moved page).
* ``skew``: the page rotated by a few degrees.
* ``noise``: Gaussian grain plus dark speckles (dust, toner).
* ``jpeg``: saved as a low-quality JPEG, with its block artefacts.
* ``low_contrast``: ink and paper squeezed towards mid grey (a faded thermal receipt).
* ``photo``: photographed rather than scanned, with some of
  ``perspective`` (the page seen at an angle, on a table), ``shadow`` (uneven lighting and
  the shadow of a hand or phone) and ``curvature`` (a page that does not lie flat).
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

SEED = 33
DPI = 150
HERE = Path(__file__).resolve().parent
FONTS = Path("/usr/share/fonts/truetype")
SANS = FONTS / "dejavu" / "DejaVuSans.ttf"
SANS_BOLD = FONTS / "dejavu" / "DejaVuSans-Bold.ttf"
SERIF = FONTS / "dejavu" / "DejaVuSerif.ttf"
SERIF_BOLD = FONTS / "dejavu" / "DejaVuSerif-Bold.ttf"
MONO = FONTS / "dejavu" / "DejaVuSansMono.ttf"
MONO_BOLD = FONTS / "dejavu" / "DejaVuSansMono-Bold.ttf"
LIB_SERIF = FONTS / "liberation" / "LiberationSerif-Regular.ttf"
LIB_SANS = FONTS / "liberation" / "LiberationSans-Regular.ttf"
LIB_SANS_BOLD = FONTS / "liberation" / "LiberationSans-Bold.ttf"

PAPER = 250
INK = 22

Array = np.ndarray


def pt(points: float) -> int:
    """A font size in points as pixels at :data:`DPI`."""
    return round(points * DPI / 72)


@dataclass
class Page:
    """A page being typeset: a grayscale canvas and the lines of its transcription."""

    width: int
    height: int
    margin: int = 90
    y: int = 0
    lines: list[str] = field(default_factory=list)
    image: Image.Image = field(init=False)
    draw: ImageDraw.ImageDraw = field(init=False)

    def __post_init__(self) -> None:
        self.image = Image.new("L", (self.width, self.height), PAPER)
        self.draw = ImageDraw.Draw(self.image)
        self.y = self.margin

    @staticmethod
    def font(path: Path, points: float) -> ImageFont.FreeTypeFont:
        return ImageFont.truetype(str(path), pt(points))

    def text(
        self,
        line: str,
        font: ImageFont.FreeTypeFont,
        *,
        x: int | None = None,
        align: str = "left",
        gap: float = 1.45,
        record: bool = True,
    ) -> None:
        """Draw one line at the cursor and move the cursor down."""
        left = self.margin if x is None else x
        if align == "right":
            left = self.width - self.margin - round(self.draw.textlength(line, font=font))
        elif align == "center":
            left = (self.width - round(self.draw.textlength(line, font=font))) // 2
        self.draw.text((left, self.y), line, font=font, fill=INK)
        if record:
            self.lines.append(line)
        self.y += round(font.size * gap)

    def paragraph(
        self,
        prose: str,
        font: ImageFont.FreeTypeFont,
        *,
        x: int | None = None,
        width: int | None = None,
        gap: float = 1.45,
    ) -> None:
        """Wrap prose to the width (pixels; default the text block) and draw its lines."""
        left = self.margin if x is None else x
        room = (self.width - 2 * self.margin) if width is None else width
        words = prose.split()
        line: list[str] = []
        for word in words:
            trial = " ".join([*line, word])
            if line and self.draw.textlength(trial, font=font) > room:
                self.text(" ".join(line), font, x=left, gap=gap)
                line = [word]
            else:
                line.append(word)
        if line:
            self.text(" ".join(line), font, x=left, gap=gap)

    def row(
        self,
        cells: Sequence[str],
        stops: Sequence[int],
        font: ImageFont.FreeTypeFont,
        *,
        right: Sequence[bool] = (),
        gap: float = 1.5,
    ) -> None:
        """A table row: each cell at its stop (left edge, or right edge where ``right``)."""
        for i, (cell, stop) in enumerate(zip(cells, stops, strict=True)):
            at = stop
            if i < len(right) and right[i]:
                at = stop - round(self.draw.textlength(cell, font=font))
            self.draw.text((at, self.y), cell, font=font, fill=INK)
        self.lines.append(" ".join(c for c in cells if c))
        self.y += round(font.size * gap)

    def rule(self, *, x0: int | None = None, x1: int | None = None, weight: int = 2) -> None:
        """A horizontal line at the cursor (not part of the transcription)."""
        left = self.margin if x0 is None else x0
        right = self.width - self.margin if x1 is None else x1
        self.draw.line([(left, self.y), (right, self.y)], fill=INK, width=weight)
        self.y += 14

    def space(self, pixels: int) -> None:
        self.y += pixels

    def cropped(self) -> Image.Image:
        """The canvas cut just below the last line, keeping the bottom margin."""
        return self.image.crop((0, 0, self.width, min(self.height, self.y + self.margin)))


# --- the pages' text -----------------------------------------------------------------


def letter() -> Page:
    page = Page(1240, 1754, margin=110)
    serif, bold = Page.font(SERIF, 11), Page.font(SERIF_BOLD, 13)
    page.text("Harwick Valley Water Cooperative", bold, gap=1.3)
    page.text("17 Mill Lane, Harwick, HV3 8QT", serif, gap=1.3)
    page.text("Telephone 01632 960 418", serif)
    page.space(20)
    page.text("Ms Teodora Lindqvist", serif, gap=1.3)
    page.text("4 Orchard Row, Lower Harwick", serif)
    page.space(10)
    page.text("Monday, 14 April 2025", serif, align="right")
    page.space(10)
    page.text("Your reference: HV-20417", serif)
    page.text("Dear Ms Lindqvist,", serif)
    page.paragraph(
        "Thank you for your letter of 2 April about the water meter at your address. Our "
        "records show that the meter, serial number 71-338-0925, was installed in June 2009 "
        "and is one of 212 older meters in the valley that we plan to replace this year.",
        serif,
    )
    page.space(12)
    page.paragraph(
        "An engineer will call on Thursday, 8 May 2025, between 9:30 and 12:00. The work "
        "takes about forty minutes and the supply will be off for no more than twenty of "
        "them. There is no charge for the replacement; the new meter is read remotely, so "
        "you will no longer need to leave the cover of the pit unlocked.",
        serif,
    )
    page.space(12)
    page.paragraph(
        "If the appointment does not suit you, please ring us before 30 April and quote the "
        "reference above. We are grateful for your patience while the valley's network is "
        "brought up to date.",
        serif,
    )
    page.space(16)
    page.text("Yours sincerely,", serif)
    page.space(30)
    page.text("Anselm Okafor", serif, gap=1.3)
    page.text("Metering Coordinator", serif)
    return page


def invoice() -> Page:
    page = Page(1240, 1754, margin=100)
    sans, bold, big = Page.font(SANS, 10), Page.font(SANS_BOLD, 10), Page.font(SANS_BOLD, 18)
    page.text("INVOICE", big, gap=1.4)
    page.text("Kestrel & Finch Joinery Ltd, Unit 9, Quarry Road, Dunmere", sans, gap=1.35)
    page.text("VAT No. GB 318 4472 96", sans)
    page.space(14)
    stops = [100, 700]
    page.row(["Invoice number: KF-2025-0387", "Date: 22/05/2025"], stops, sans)
    page.row(["Customer: Brightwater Primary School", "Due: 21/06/2025"], stops, sans)
    page.row(["Order reference: PO 55120", "Terms: 30 days"], stops, sans)
    page.space(18)
    cols = [100, 680, 860, 1140]
    right = [False, True, True, True]
    page.row(["Description", "Qty", "Unit price", "Amount"], cols, bold, right=right)
    page.rule()
    items = [
        ("Oak bench, 1.8 m, oiled finish", "6", "245.00", "1,470.00"),
        ("Coat hooks, brushed steel (pack of 10)", "4", "18.50", "74.00"),
        ("Bookshelf unit, 3 tiers, birch ply", "2", "312.75", "625.50"),
        ("Fitting and wall fixings", "1", "160.00", "160.00"),
        ("Delivery within 25 miles", "1", "45.00", "45.00"),
    ]
    for item in items:
        page.row(list(item), cols, sans, right=right)
    page.rule()
    totals = [100, 860, 1140]
    page.row(["", "Subtotal", "2,374.50"], totals, sans, right=[False, True, True])
    page.row(["", "VAT at 20%", "474.90"], totals, sans, right=[False, True, True])
    page.row(["", "Total due", "2,849.40"], totals, bold, right=[False, True, True])
    page.space(20)
    page.text("Please pay by bank transfer to sort code 40-18-22, account 61047733,", sans)
    page.text("quoting the invoice number. Thank you for your custom.", sans)
    return page


def receipt() -> Page:
    page = Page(620, 1600, margin=50)
    mono, bold = Page.font(MONO, 9), Page.font(MONO_BOLD, 11)
    page.text("GREENGAGE GROCERS", bold, align="center", gap=1.35)
    page.text("118 Castle Street, Penlow", mono, align="center", gap=1.35)
    page.text("Tel 01632 960 771", mono, align="center")
    page.space(8)
    page.text("12/03/2025 17:42  Till 3", mono)
    page.text("Served by: Priya", mono)
    page.space(6)
    cols = [50, 570]
    right = [False, True]
    for name, price in [
        ("Sourdough loaf", "3.40"),
        ("Free range eggs x12", "4.15"),
        ("Leeks 0.64 kg", "1.41"),
        ("Cheddar, mature 400g", "5.25"),
        ("Apples Cox 1.2 kg", "2.88"),
        ("Oat milk 1 L", "1.85"),
        ("Dark chocolate 85%", "2.10"),
    ]:
        page.row([name, price], cols, mono, right=right, gap=1.4)
    page.space(6)
    page.row(["7 ITEMS  TOTAL", "21.04"], cols, bold, right=right, gap=1.4)
    page.row(["CARD  **** 4821", "21.04"], cols, mono, right=right, gap=1.4)
    page.row(["CHANGE", "0.00"], cols, mono, right=right, gap=1.4)
    page.space(10)
    page.text("Thank you for shopping local!", mono, align="center", gap=1.35)
    page.text("Returns within 14 days", mono, align="center", gap=1.35)
    page.text("with this receipt.", mono, align="center")
    return page


def form() -> Page:
    page = Page(1240, 1754, margin=100)
    sans, bold = Page.font(LIB_SANS, 11), Page.font(LIB_SANS_BOLD, 11)
    title = Page.font(LIB_SANS_BOLD, 15)
    page.text("Allotment Tenancy Application", title, gap=1.5)
    page.text("Section A - Applicant", bold, gap=1.6)
    stops = [100, 470]
    for label, value in [
        ("Full name:", "Marta Ilves"),
        ("Date of birth:", "03/11/1978"),
        ("Address:", "27 Ferndale Close, Ashby Marsh"),
        ("Postcode:", "AM4 2RW"),
        ("Telephone:", "07700 900 356"),
        ("Email:", "m.ilves@example.org"),
    ]:
        page.row([label, value], stops, sans, gap=1.25)
        page.rule(x0=470, x1=1100, weight=1)
        page.space(6)
    page.space(14)
    page.text("Section B - Plot preference", bold, gap=1.6)
    page.row(["Plot size:", "[x] Half plot   [ ] Full plot"], stops, sans, gap=1.6)
    page.row(["Site:", "[ ] Mill Field   [x] Church Lane"], stops, sans, gap=1.6)
    page.row(["Previous tenancy:", "[ ] Yes   [x] No"], stops, sans, gap=1.6)
    page.space(14)
    page.text("Section C - Declaration", bold, gap=1.6)
    page.paragraph(
        "I agree to keep the plot cultivated, to pay the yearly rent of 38 pounds by 1 "
        "October, and to give four weeks notice if I end the tenancy.",
        sans,
        gap=1.4,
    )
    page.space(16)
    page.row(["Signed:", "M. Ilves"], stops, sans, gap=1.6)
    page.row(["Date:", "19 February 2025"], stops, sans, gap=1.6)
    return page


def newsletter() -> Page:
    page = Page(1240, 1754, margin=90)
    title, head = Page.font(SERIF_BOLD, 17), Page.font(SANS_BOLD, 11)
    body = Page.font(LIB_SERIF, 10.5)
    page.text("The Dunmere Ledger", title, align="center", gap=1.2)
    page.text("Issue 41 - Spring 2025", Page.font(SERIF, 10), align="center", gap=1.6)
    page.rule()
    top = page.y + 10
    column = (1240 - 2 * 90 - 60) // 2
    left_x, right_x = 90, 90 + column + 60
    page.y = top
    page.text("Bridge repairs finish early", head, x=left_x, gap=1.6)
    page.paragraph(
        "The footbridge over the Dun reopened on 3 March, eleven days ahead of the plan. "
        "Crews replaced 48 of the timber deck boards and repainted the rails in the "
        "original dark green. The parish council thanks everyone who put up with the "
        "detour through the station car park.",
        body,
        x=left_x,
        width=column,
        gap=1.4,
    )
    page.space(20)
    page.text("Library hours", head, x=left_x, gap=1.6)
    page.paragraph(
        "From 1 April the library opens on Tuesdays until 7 pm and on Saturdays from "
        "10 am to 4 pm. The reading group meets on the second Wednesday of each month.",
        body,
        x=left_x,
        width=column,
        gap=1.4,
    )
    left_end = page.y
    page.y = top
    page.text("Seed swap in the square", head, x=right_x, gap=1.6)
    page.paragraph(
        "Bring spare seeds, cuttings or young plants to the market square on Sunday "
        "27 April from 10 am. Last year 130 people came and over 600 packets changed "
        "hands. Tables are free; labels and envelopes will be provided.",
        body,
        x=right_x,
        width=column,
        gap=1.4,
    )
    page.space(20)
    page.text("Results of the survey", head, x=right_x, gap=1.6)
    page.paragraph(
        "Of the 412 households that replied, 71 percent want a second bus to Penlow on "
        "weekday evenings and 58 percent would use a shared electric van. The full "
        "results are pinned up in the post office window.",
        body,
        x=right_x,
        width=column,
        gap=1.4,
    )
    page.y = max(page.y, left_end)
    return page


def timetable() -> Page:
    page = Page(1240, 1754, margin=100)
    sans, bold = Page.font(SANS, 10.5), Page.font(SANS_BOLD, 10.5)
    title = Page.font(SANS_BOLD, 15)
    page.text("Isle of Carrow Ferry - Summer Timetable", title, gap=1.4)
    page.text("Valid 1 June 2025 to 14 September 2025", sans, gap=1.8)
    cols = [100, 400, 700, 960]
    page.row(["Day", "Departs Port Ellan", "Arrives Carrow", "Vessel"], cols, bold)
    page.rule()
    for row in [
        ("Monday", "07:15", "08:05", "MV Tern"),
        ("Tuesday", "07:15", "08:05", "MV Tern"),
        ("Wednesday", "09:40", "10:30", "MV Guillemot"),
        ("Thursday", "07:15", "08:05", "MV Tern"),
        ("Friday", "16:50", "17:40", "MV Guillemot"),
        ("Saturday", "10:20", "11:10", "MV Tern"),
        ("Sunday", "13:00", "13:50", "MV Tern"),
    ]:
        page.row(list(row), cols, sans)
    page.rule()
    page.space(10)
    page.text("Fares: adult 14.60, child 7.30, car and driver 52.00, bicycle 3.00.", sans)
    page.text("No sailings on 12 July 2025 (harbour works). Check in 30 minutes", sans)
    page.text("before departure; vehicles must book by 18:00 the day before.", sans)
    return page


def memo() -> Page:
    page = Page(1240, 1754, margin=110)
    sans, bold = Page.font(LIB_SANS, 11), Page.font(LIB_SANS_BOLD, 11)
    page.text("MEMORANDUM", Page.font(LIB_SANS_BOLD, 16), gap=1.6)
    stops = [110, 300]
    page.row(["To:", "All site supervisors"], stops, sans)
    page.row(["From:", "Ruth Abernethy, Health and Safety"], stops, sans)
    page.row(["Date:", "9 January 2025"], stops, sans)
    page.row(["Subject:", "Winter working and the new ladder register"], stops, bold)
    page.rule()
    page.space(6)
    page.paragraph(
        "Following the two slips reported in December, gritting of every access route "
        "must be finished by 7:30 on any morning when the forecast is below 2 degrees. "
        "Each site now keeps at least 150 kg of grit in a covered bin near the gate.",
        sans,
    )
    page.space(12)
    page.paragraph(
        "From 3 February all ladders and stepladders are entered in the register with a "
        "tag number, the date of the last inspection and the name of the inspector. A "
        "ladder without a tag, or with an inspection older than 90 days, must not be used.",
        sans,
    )
    page.space(12)
    page.paragraph(
        "Please confirm by 24 January that your site has read this memo, and send the "
        "number of ladders you hold to extension 4417.",
        sans,
    )
    return page


def notice() -> Page:
    page = Page(1240, 1754, margin=100)
    big, head = Page.font(SANS_BOLD, 22), Page.font(SANS_BOLD, 14)
    body = Page.font(SANS, 13)
    page.text("COMMUNITY GARDEN", big, align="center", gap=1.3)
    page.text("Plot allocation evening", head, align="center", gap=1.8)
    page.paragraph(
        "Wednesday 16 April 2025, 6:30 pm in the Scout Hut on Barrow Lane. Nineteen plots "
        "are free this year, including four raised beds for wheelchair users.",
        body,
        gap=1.45,
    )
    page.space(16)
    page.paragraph(
        "Plots are drawn by lot. Bring proof of address and a deposit of 20 pounds, "
        "returned when you give the plot back tidy.",
        body,
        gap=1.45,
    )
    page.space(16)
    page.text("Questions? Call Idris on 01632 960 254", head, align="center")
    return page


def recipe() -> Page:
    page = Page(1240, 1754, margin=110)
    title, head = Page.font(SERIF_BOLD, 16), Page.font(SERIF_BOLD, 12)
    body = Page.font(SERIF, 11.5)
    page.text("Barley and Leek Soup", title, gap=1.4)
    page.text("Serves 4. Takes 55 minutes.", body, gap=1.8)
    page.text("Ingredients", head, gap=1.6)
    for line in [
        "2 large leeks, washed and sliced",
        "120 g pearl barley, rinsed",
        "1 carrot and 2 sticks of celery, diced",
        "1.2 litres of vegetable stock",
        "30 g butter and a bay leaf",
        "a handful of chopped parsley",
    ]:
        page.text(line, body, gap=1.45)
    page.space(12)
    page.text("Method", head, gap=1.6)
    page.paragraph(
        "Melt the butter and soften the leeks, carrot and celery for 8 minutes. Add the "
        "barley, stock and bay leaf, bring to the boil and simmer for 40 minutes until the "
        "barley is tender. Season, stir in the parsley and serve with crusty bread.",
        body,
    )
    return page


# --- degradations ----------------------------------------------------------------------


def blurred(image: Image.Image, radius: float) -> Image.Image:
    return image.filter(ImageFilter.GaussianBlur(radius))


def skewed(image: Image.Image, degrees: float) -> Image.Image:
    return image.rotate(degrees, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=PAPER)


def noisy(image: Image.Image, rng: np.random.Generator, sigma: float, dust: float) -> Image.Image:
    grain = rng.normal(0.0, sigma, (image.height, image.width))
    pixels = np.asarray(image, dtype=np.float64) + grain
    specks = rng.random(pixels.shape) < dust
    pixels[specks] = rng.uniform(20, 90, int(specks.sum()))
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8))


def faded(image: Image.Image, ink: int, paper: int) -> Image.Image:
    """Map black..white onto ``ink``..``paper``: less contrast, a grey sheet."""
    pixels = np.asarray(image, dtype=np.float32) / 255.0
    return Image.fromarray((ink + (paper - ink) * pixels).clip(0, 255).astype(np.uint8))


def _bilinear(source: Array, xs: Array, ys: Array) -> tuple[Array, Array]:
    """Sample a grayscale array at float coordinates; the mask says which fell inside."""
    height, width = source.shape
    inside = (xs >= 0) & (xs <= width - 1) & (ys >= 0) & (ys <= height - 1)
    x = xs.clip(0, width - 1.001)
    y = ys.clip(0, height - 1.001)
    x0, y0 = np.floor(x).astype(np.int64), np.floor(y).astype(np.int64)
    fx, fy = x - x0, y - y0
    top = source[y0, x0] * (1 - fx) + source[y0, x0 + 1] * fx
    bottom = source[y0 + 1, x0] * (1 - fx) + source[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy, inside


def _homography(src: Sequence[tuple[float, float]], dst: Sequence[tuple[float, float]]) -> Array:
    """The 3x3 projective map taking the four ``src`` points to the four ``dst`` points."""
    rows, rhs = [], []
    for (x, y), (u, v) in zip(src, dst, strict=True):
        rows.append([x, y, 1, 0, 0, 0, -u * x, -u * y])
        rows.append([0, 0, 0, x, y, 1, -v * x, -v * y])
        rhs.extend([u, v])
    h = np.linalg.solve(np.array(rows, dtype=np.float64), np.array(rhs, dtype=np.float64))
    return np.append(h, 1.0).reshape(3, 3)


@dataclass(frozen=True)
class Photo:
    """How a page is photographed: how large it shows, where its corners move, how it
    bends and how it is lit (pixels of the photograph)."""

    scale: float  # the page's width in the photograph over its width as rendered
    pad: int  # table showing around the page
    # how far each corner moves from the upright rectangle: top-left, top-right,
    # bottom-right, bottom-left
    moves: tuple[tuple[float, float], ...] = ((0, 0), (0, 0), (0, 0), (0, 0))
    bend: float = 0.0  # pixels the middle of the page lifts (curvature)
    light: tuple[float, float] = (1.0, 1.0)  # brightness at the left and right edges
    shadow: tuple[float, float, float, float] | None = None  # cx, cy (0..1), radius, depth
    grain: float = 3.0
    focus: float = 0.6


def photographed(page: Image.Image, how: Photo, rng: np.random.Generator) -> Image.Image:
    """The page lying on a table, seen by a phone: bent, at an angle, unevenly lit."""
    flat = np.asarray(page, dtype=np.float32)
    height, width = flat.shape
    shown_w, shown_h = width * how.scale, height * how.scale
    out_w, out_h = round(shown_w + 2 * how.pad), round(shown_h + 2 * how.pad)
    upright = [
        (how.pad, how.pad),
        (how.pad + shown_w, how.pad),
        (how.pad + shown_w, how.pad + shown_h),
        (how.pad, how.pad + shown_h),
    ]
    corners = [(x + dx, y + dy) for (x, y), (dx, dy) in zip(upright, how.moves, strict=True)]
    inverse = np.linalg.inv(
        _homography([(0, 0), (width, 0), (width, height), (0, height)], corners)
    )
    us, vs = np.meshgrid(np.arange(out_w, dtype=np.float64), np.arange(out_h, dtype=np.float64))
    px = inverse[0, 0] * us + inverse[0, 1] * vs + inverse[0, 2]
    py = inverse[1, 0] * us + inverse[1, 1] * vs + inverse[1, 2]
    pw = inverse[2, 0] * us + inverse[2, 1] * vs + inverse[2, 2]
    xs, ys = px / pw, py / pw
    # the bent page: a point (x, y) of the flat page shows at y + lift(x) * (0.6 + 0.8 y/H)
    lift = how.bend * np.sin(np.pi * xs.clip(0, width) / width)
    ys = (ys - 0.6 * lift) / (1 + 0.8 * lift / height)
    grey, inside = _bilinear(flat, xs, ys)
    table = 92 + 10 * np.sin(vs / 37.0 + us / 211.0) + rng.normal(0, 4, (out_h, out_w))
    grey = np.where(inside, grey, table)
    left, right = how.light
    light = left + (right - left) * (us / out_w)
    if how.shadow is not None:
        cx, cy, radius, depth = how.shadow
        distance = np.hypot(us - cx * out_w, vs - cy * out_h) / radius
        light = light * (1 - depth * np.exp(-(distance**2)))
    tint = np.array([1.0, 0.96, 0.88], dtype=np.float64)  # warm indoor light
    rgb = grey[..., None] * light[..., None] * tint
    rgb = rgb + rng.normal(0, how.grain, rgb.shape)
    image = Image.fromarray(rgb.clip(0, 255).astype(np.uint8), "RGB")
    return blurred(image, how.focus)


# --- the suite ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """One committed page: its file stem, its text, its layout and its degradations."""

    stem: str
    text: str  # the name of the function that typesets it; also the truth file's name
    layout: str
    kinds: tuple[str, ...]


SPECS = (
    Spec("p01_letter_clean", "letter", "letter", ("clean",)),
    Spec("p02_letter_scan", "letter", "letter", ("skew", "noise", "jpeg")),
    Spec("p03_invoice_clean", "invoice", "table", ("clean",)),
    Spec("p04_invoice_faded", "invoice", "table", ("low_contrast", "blur")),
    Spec("p05_newsletter_clean", "newsletter", "two_columns", ("clean",)),
    Spec("p06_timetable_clean", "timetable", "table", ("clean",)),
    Spec("p07_form_skew", "form", "form", ("skew",)),
    Spec("p08_memo_blur", "memo", "headings", ("blur", "jpeg")),
    Spec("p09_receipt_thermal", "receipt", "receipt", ("low_contrast", "noise", "jpeg")),
    Spec("p10_notice_photo", "notice", "notice", ("photo", "perspective", "shadow", "jpeg")),
    Spec(
        "p11_receipt_photo",
        "receipt",
        "receipt",
        ("photo", "perspective", "curvature", "shadow", "jpeg"),
    ),
    Spec("p12_recipe_photo", "recipe", "headings", ("photo", "curvature", "shadow", "jpeg")),
    Spec(
        "p13_timetable_photo",
        "timetable",
        "table",
        ("photo", "perspective", "shadow", "noise", "jpeg"),
    ),
)

TEXTS = {
    "letter": letter,
    "invoice": invoice,
    "receipt": receipt,
    "form": form,
    "newsletter": newsletter,
    "timetable": timetable,
    "memo": memo,
    "notice": notice,
    "recipe": recipe,
}


def degrade(spec: Spec, page: Image.Image, rng: np.random.Generator) -> Image.Image:
    """Apply the spec's degradations; the JPEG one is applied when the file is saved."""
    match spec.stem:
        case "p02_letter_scan":
            page = skewed(page, -1.8)
            return noisy(page, rng, sigma=14.0, dust=0.0006)
        case "p04_invoice_faded":
            return blurred(faded(page, ink=118, paper=206), 1.1)
        case "p07_form_skew":
            return skewed(page, 2.5)
        case "p08_memo_blur":
            return blurred(page, 1.5)
        case "p09_receipt_thermal":
            return noisy(faded(page, ink=105, paper=232), rng, sigma=10.0, dust=0.0004)
        case "p10_notice_photo":
            how = Photo(
                scale=0.85,
                pad=60,
                moves=((70, 10), (-40, 40), (10, -10), (-20, -40)),
                light=(1.05, 0.8),
                shadow=(0.85, 0.85, 300.0, 0.45),
            )
            return photographed(page, how, rng)
        case "p11_receipt_photo":
            how = Photo(
                scale=0.95,
                pad=50,
                moves=((40, 0), (0, 30), (20, 0), (-20, -20)),
                bend=22.0,
                light=(0.75, 1.05),
                shadow=(0.15, 0.85, 260.0, 0.4),
            )
            return photographed(page, how, rng)
        case "p12_recipe_photo":
            how = Photo(
                scale=0.9,
                pad=40,
                moves=((0, 0), (20, 10), (0, 0), (10, 0)),
                bend=30.0,
                light=(0.95, 0.7),
                shadow=(0.9, 0.15, 380.0, 0.35),
                focus=0.9,
            )
            return photographed(page, how, rng)
        case "p13_timetable_photo":
            how = Photo(
                scale=0.9,
                pad=50,
                moves=((40, 60), (-20, -20), (30, -20), (0, 20)),
                light=(0.8, 1.05),
                shadow=(0.25, 0.15, 300.0, 0.4),
                grain=7.0,
            )
            return photographed(page, how, rng)
    if spec.kinds != ("clean",):
        raise ValueError(f"{spec.stem}: no degradation written for {spec.kinds}")
    return page


def save(image: Image.Image, path: Path, jpeg: bool, quality: int) -> None:
    if jpeg:
        image.save(path, "JPEG", quality=quality, optimize=True)
    else:
        image.save(path, "PNG", optimize=True)


JPEG_QUALITY = {
    "p02_letter_scan": 40,
    "p08_memo_blur": 35,
    "p09_receipt_thermal": 45,
    "p10_notice_photo": 60,
    "p11_receipt_photo": 60,
    "p12_recipe_photo": 55,
    "p13_timetable_photo": 60,
}


def generate(folder: Path) -> list[dict[str, object]]:
    """Write ``pages/``, ``truth/`` and ``manifest.jsonl`` into the folder."""
    (folder / "pages").mkdir(parents=True, exist_ok=True)
    (folder / "truth").mkdir(parents=True, exist_ok=True)
    rendered: dict[str, Page] = {}
    rows: list[dict[str, object]] = []
    for number, spec in enumerate(SPECS, start=1):
        page = rendered.get(spec.text)
        if page is None:
            page = rendered[spec.text] = TEXTS[spec.text]()
            truth = "\n".join(page.lines) + "\n"
            (folder / "truth" / f"{spec.text}.txt").write_text(truth, encoding="utf-8")
        rng = np.random.default_rng([SEED, number])
        image = degrade(spec, page.cropped(), rng)
        jpeg = "jpeg" in spec.kinds
        name = f"{spec.stem}.{'jpg' if jpeg else 'png'}"
        save(image, folder / "pages" / name, jpeg, JPEG_QUALITY.get(spec.stem, 75))
        rows.append(
            {
                "file": f"pages/{name}",
                "truth": f"truth/{spec.text}.txt",
                "kinds": list(spec.kinds),
                "layout": spec.layout,
            }
        )
    manifest = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "manifest.jsonl").write_text(manifest, encoding="utf-8")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").split("\n")[0])
    parser.add_argument("folder", nargs="?", default=str(HERE), help="default: this folder")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    rows = generate(folder)
    total = sum((folder / str(row["file"])).stat().st_size for row in rows)
    for row in rows:
        size = (folder / str(row["file"])).stat().st_size
        print(f"{row['file']!s:34} {size / 1024:7.1f} KiB  {row['kinds']}")
    print(f"{len(rows)} pages, {total / 1024:.0f} KiB in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
