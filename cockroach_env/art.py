"""The card art: one vector description of every card, drawn as SVG (the web page and
replays) and with Pillow (``render_mode="rgb_array"``).

Everything here is drawn by the project from a handful of primitives (ellipses,
polygons, polylines) in a 120 x 168 card box, so the page and the picture show the
same cards. Colours are the Okabe-Ito palette (distinguishable with every common
form of colour blindness), and every card also carries its creature's name and a
two-letter code, so colour is never the only cue.

No drawing library is imported here: ``card_svg`` writes text, and
``cockroach_env.picture`` replays the same primitives on a Pillow canvas.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

CARD_WIDTH, CARD_HEIGHT = 120, 168
INK = "#1f1f1f"
PAPER = "#fbf8f1"
BACK = "#24324a"
FONT = "DejaVu Sans, Verdana, sans-serif"
"""The text font of the SVG cards (a browser falls back along the list)."""

PALETTE = {
    "cockroach": "#E69F00",  # orange
    "bat": "#3b3b3b",  # black (softened so the outline stays visible)
    "fly": "#56B4E9",  # sky blue
    "toad": "#009E73",  # bluish green
    "rat": "#CC79A7",  # reddish purple
    "scorpion": "#D55E00",  # vermillion
    "spider": "#0072B2",  # blue
    "stink_bug": "#F0E442",  # yellow
}
"""Okabe-Ito colours, one per creature."""

CODES = {
    "cockroach": "Co",
    "bat": "Ba",
    "fly": "Fl",
    "toad": "To",
    "rat": "Ra",
    "scorpion": "Sc",
    "spider": "Sp",
    "stink_bug": "SB",
    "joker": "Jk",
    "blank": "Bl",
}


@dataclass(frozen=True)
class Shape:
    """One primitive in card coordinates: ``ellipse`` (cx, cy, rx, ry), ``polygon`` or
    ``polyline`` (x0, y0, x1, y1, ...); ``fill``/``stroke`` are colours or ``None``.
    """

    kind: str
    points: tuple[float, ...]
    fill: str | None = None
    stroke: str | None = INK
    width: float = 2.0


def _ellipse(cx, cy, rx, ry, fill=None, stroke=INK, width=2.0) -> Shape:
    return Shape("ellipse", (cx, cy, rx, ry), fill, stroke, width)


def _poly(points, fill=None, stroke=INK, width=2.0) -> Shape:
    return Shape("polygon", tuple(v for p in points for v in p), fill, stroke, width)


def _line(points, stroke=INK, width=2.5) -> Shape:
    return Shape("polyline", tuple(v for p in points for v in p), None, stroke, width)


def _cockroach(colour: str) -> list[Shape]:
    legs = [
        _line([(60 + s * 14, y), (60 + s * 30, y + d), (60 + s * 34, y + d + 10)])
        for s in (-1, 1)
        for y, d in ((78, -10), (90, 0), (102, 10))
    ]
    return legs + [
        _line([(55, 58), (42, 44), (34, 46)]),
        _line([(65, 58), (78, 44), (86, 46)]),
        _ellipse(60, 92, 17, 30, colour),
        _line([(60, 70), (60, 120)], INK, 1.5),
        _ellipse(60, 62, 11, 8, colour),
    ]


def _bat(colour: str) -> list[Shape]:
    wing = [(60, 82), (48, 74), (22, 70), (10, 84), (20, 86), (26, 98), (36, 94), (44, 104), (56, 96)]
    return [
        _poly(wing, colour),
        _poly([(120 - x, y) for x, y in wing], colour),
        _ellipse(60, 88, 10, 18, colour),
        _poly([(52, 74), (50, 60), (57, 70)], colour),
        _poly([(68, 74), (70, 60), (63, 70)], colour),
        _ellipse(56, 80, 2, 2, PAPER, None),
        _ellipse(64, 80, 2, 2, PAPER, None),
    ]


def _fly(colour: str) -> list[Shape]:
    return [
        _ellipse(40, 74, 20, 11, "#e9f5fc"),
        _ellipse(80, 74, 20, 11, "#e9f5fc"),
        _line([(50, 100), (36, 112)]),
        _line([(70, 100), (84, 112)]),
        _line([(52, 92), (34, 96)]),
        _line([(68, 92), (86, 96)]),
        _ellipse(60, 96, 13, 22, colour),
        _ellipse(60, 68, 12, 10, colour),
        _ellipse(53, 64, 6, 6, "#b22222"),
        _ellipse(67, 64, 6, 6, "#b22222"),
    ]


def _toad(colour: str) -> list[Shape]:
    return [
        _poly([(34, 104), (18, 116), (38, 114)], colour),
        _poly([(86, 104), (102, 116), (82, 114)], colour),
        _ellipse(60, 96, 34, 22, colour),
        _ellipse(46, 74, 9, 9, colour),
        _ellipse(74, 74, 9, 9, colour),
        _ellipse(46, 73, 4, 4, INK, None),
        _ellipse(74, 73, 4, 4, INK, None),
        _line([(46, 100), (60, 106), (74, 100)], INK, 2.0),
    ]


def _rat(colour: str) -> list[Shape]:
    return [
        _line([(84, 104), (98, 110), (104, 96), (98, 84)], INK, 3.0),
        _ellipse(66, 96, 24, 16, colour),
        _poly([(46, 90), (22, 96), (46, 106)], colour),
        _ellipse(48, 82, 8, 8, colour),
        _ellipse(34, 94, 2.5, 2.5, INK, None),
        _ellipse(22, 96, 2, 2, INK, None),
        _line([(56, 112), (54, 120)]),
        _line([(76, 112), (78, 120)]),
    ]


def _scorpion(colour: str) -> list[Shape]:
    tail = [(60, 104), (72, 108), (86, 100), (92, 84), (86, 68), (74, 62)]
    return [
        _line(tail, colour, 8.0),
        _line(tail, INK, 1.0),
        _poly([(74, 56), (66, 62), (76, 68)], INK),
        _line([(46, 96), (30, 84), (30, 74)]),
        _line([(74, 96), (60, 84)]),
        _ellipse(30, 68, 8, 6, colour),
        _ellipse(52, 102, 16, 10, colour),
        _line([(42, 110), (34, 120)]),
        _line([(54, 112), (52, 122)]),
        _line([(64, 110), (70, 120)]),
    ]


def _spider(colour: str) -> list[Shape]:
    legs = []
    for s in (-1, 1):
        for dy, reach, drop in ((-10, 30, -16), (-2, 36, -4), (6, 36, 10), (14, 30, 22)):
            legs.append(
                _line([(60 + s * 10, 90 + dy), (60 + s * reach, 80 + dy), (60 + s * (reach + 8), 90 + dy + drop)])
            )
    return legs + [
        _ellipse(60, 98, 16, 18, colour),
        _ellipse(60, 76, 10, 9, colour),
        _ellipse(56, 74, 2, 2, PAPER, None),
        _ellipse(64, 74, 2, 2, PAPER, None),
    ]


def _stink_bug(colour: str) -> list[Shape]:
    legs = [_line([(60 + s * 20, y), (60 + s * 34, y + 6)]) for s in (-1, 1) for y in (84, 96, 108)]
    return legs + [
        _line([(55, 66), (44, 52)]),
        _line([(65, 66), (76, 52)]),
        _poly([(36, 80), (84, 80), (78, 104), (60, 120), (42, 104)], colour),
        _poly([(50, 80), (70, 80), (60, 96)], "#ffffff", INK, 1.5),
        _ellipse(60, 72, 10, 8, colour),
    ]


_CREATURES = {
    "cockroach": _cockroach,
    "bat": _bat,
    "fly": _fly,
    "toad": _toad,
    "rat": _rat,
    "scorpion": _scorpion,
    "spider": _spider,
    "stink_bug": _stink_bug,
}
"""Each creature's drawing, centred on (60, 88) within about 80 x 70."""


def _creature(name: str, colour: str) -> list[Shape]:
    """The creature drawing, centred on (60, 88) within about 80 x 70."""
    if name not in _CREATURES:
        raise ValueError(f"no drawing for creature {name!r}; expected one of {sorted(PALETTE)}")
    return _CREATURES[name](colour)


def _crown() -> list[Shape]:
    return [_poly([(40, 52), (44, 36), (52, 46), (60, 32), (68, 46), (76, 36), (80, 52)], "#ffffff", INK, 2.0)]


def _joker() -> list[Shape]:
    """A star of every creature colour."""
    shapes = []
    colours = list(PALETTE.values())
    for k in range(8):
        a0, a1 = 2 * math.pi * k / 8, 2 * math.pi * (k + 1) / 8
        mid = (a0 + a1) / 2
        tip = (60 + 38 * math.sin(mid), 88 - 38 * math.cos(mid))
        shapes.append(
            _poly(
                [
                    (60, 88),
                    (60 + 14 * math.sin(a0), 88 - 14 * math.cos(a0)),
                    tip,
                    (60 + 14 * math.sin(a1), 88 - 14 * math.cos(a1)),
                ],
                colours[k],
                INK,
                1.5,
            )
        )
    return shapes


@dataclass(frozen=True)
class CardArt:
    """Everything drawn on the face of one card identity."""

    identity: str
    colour: str
    label: str
    code: str
    shapes: tuple[Shape, ...]
    royal: bool = False


def card_art(identity: str) -> CardArt:
    """The face of ``identity`` (a classic creature, ``royal_<animal>``, ``joker`` or ``blank``)."""
    if identity == "joker":
        return CardArt(identity, "#6b6b6b", "JOKER", CODES["joker"], tuple(_joker()))
    if identity == "blank":
        return CardArt(identity, "#9a9a9a", "BLANK", CODES["blank"], ())
    royal = identity.startswith("royal_")
    creature = identity[len("royal_") :] if royal else identity
    if creature not in PALETTE:
        raise ValueError(
            f"no card art for {identity!r}; expected a creature of {sorted(PALETTE)}, royal_<creature>, 'joker' or "
            "'blank'"
        )
    shapes = _creature(creature, PALETTE[creature]) + (_crown() if royal else [])
    label = creature.replace("_", " ").upper()
    return CardArt(
        identity, PALETTE[creature], ("ROYAL " if royal else "") + label, CODES[creature], tuple(shapes), royal
    )


def label_of(identity: str) -> str:
    """The readable name of a card or claim (``stink_bug`` -> ``stink bug``)."""
    return identity.replace("_", " ")


# ---------------------------------------------------------------------------- SVG
def _svg_shape(shape: Shape) -> str:
    fill = shape.fill or "none"
    stroke = shape.stroke or "none"
    common = (
        f'fill="{fill}" stroke="{stroke}" stroke-width="{shape.width:g}" stroke-linejoin="round" stroke-linecap="round"'
    )
    p = shape.points
    if shape.kind == "ellipse":
        return f'<ellipse cx="{p[0]:g}" cy="{p[1]:g}" rx="{p[2]:g}" ry="{p[3]:g}" {common}/>'
    pts = " ".join(f"{p[i]:g},{p[i + 1]:g}" for i in range(0, len(p), 2))
    return f'<{shape.kind} points="{pts}" {common}/>'


def card_svg(identity: str) -> str:
    """The face of a card as a standalone SVG element (scales to any size)."""
    art = card_art(identity)
    label_size = 13 if len(art.label) <= 10 else 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CARD_WIDTH} {CARD_HEIGHT}" role="img" '
        f'aria-label="{escape(art.label.lower())}">',
        f'<rect x="2" y="2" width="{CARD_WIDTH - 4}" height="{CARD_HEIGHT - 4}" rx="10" fill="{PAPER}" '
        f'stroke="{art.colour}" stroke-width="4"'
        + (' stroke-dasharray="8 5"' if art.identity == "blank" else "")
        + "/>",
        f'<rect x="8" y="8" width="{CARD_WIDTH - 16}" height="22" rx="5" fill="{art.colour}"/>',
        f'<text x="14" y="24" font-family="{FONT}" font-size="14" font-weight="bold" '
        f'fill="{text_colour_on(art.colour)}">{art.code}</text>',
        *(_svg_shape(s) for s in art.shapes),
        f'<rect x="8" y="{CARD_HEIGHT - 32}" width="{CARD_WIDTH - 16}" height="24" rx="5" fill="#ffffff" '
        f'stroke="{art.colour}" stroke-width="2"/>',
        f'<text x="{CARD_WIDTH / 2:g}" y="{CARD_HEIGHT - 15}" text-anchor="middle" font-family="{FONT}" '
        f'font-size="{label_size}" font-weight="bold" fill="{INK}">{escape(art.label)}</text>',
        "</svg>",
    ]
    return "".join(parts)


def back_svg() -> str:
    """The back of a card: the same for every card, so it tells nothing."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {CARD_WIDTH} {CARD_HEIGHT}" role="img" '
        'aria-label="face-down card">'
        f'<rect x="2" y="2" width="{CARD_WIDTH - 4}" height="{CARD_HEIGHT - 4}" rx="10" fill="{BACK}" '
        'stroke="#0d1626" stroke-width="4"/>'
        f'<rect x="12" y="12" width="{CARD_WIDTH - 24}" height="{CARD_HEIGHT - 24}" rx="6" fill="none" '
        'stroke="#8fa3c4" stroke-width="2" stroke-dasharray="4 4"/>'
        f'<text x="60" y="98" text-anchor="middle" font-family="{FONT}" font-size="40" font-weight="bold" '
        'fill="#8fa3c4">?</text>'
        "</svg>"
    )


def text_colour_on(colour: str) -> str:
    """Ink or white text, whichever reads better on a background ``colour``."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return INK if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "#ffffff"


def art_sheet(identities) -> dict[str, str]:
    """SVG of every identity plus ``"back"``: what the page and replays embed."""
    sheet = {identity: card_svg(identity) for identity in identities}
    sheet["back"] = back_svg()
    return sheet
