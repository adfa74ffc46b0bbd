"""``render_mode="rgb_array"``: the table as one seat sees it, drawn with Pillow.

The picture is drawn from ``cockroach_env.view.seat_view`` (so it can show nothing
the viewer may not see) with the card art of ``cockroach_env.art`` (the same
drawings as the web page). Pillow is an optional extra (``pip install
"cockroach-poker-rl[render]"``), imported only when a picture is drawn. Text uses
Pillow's bundled font, so no system font is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cockroach_env.art import BACK, CARD_HEIGHT, CARD_WIDTH, INK, PAPER, card_art, label_of, text_colour_on
from cockroach_env.view import describe_event

WIDTH, HEIGHT = 1000, 700
"""Logical size of the picture; ``render`` returns an array of shape (HEIGHT, WIDTH, 3)."""
SUPERSAMPLE = 2
FELT, FELT_DARK, PANEL, HIGHLIGHT, LOSER = "#2f5d46", "#244a37", "#f4efe2", "#F0E442", "#D55E00"


def _pillow():
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as error:
        raise ImportError(
            'render_mode="rgb_array" draws with Pillow, which is not installed; '
            'install it with pip install "cockroach-poker-rl[render]"'
        ) from error
    return Image, ImageDraw, ImageFont


class _Canvas:
    """A Pillow canvas in logical coordinates (drawn at ``SUPERSAMPLE`` x, then reduced)."""

    def __init__(self):
        Image, ImageDraw, ImageFont = _pillow()
        self._image_module = Image
        self.image = Image.new("RGB", (WIDTH * SUPERSAMPLE, HEIGHT * SUPERSAMPLE), FELT)
        self.draw = ImageDraw.Draw(self.image)
        self._font_module = ImageFont
        self._fonts: dict[int, Any] = {}

    def font(self, size: float):
        px = max(6, int(round(size * SUPERSAMPLE)))
        if px not in self._fonts:
            self._fonts[px] = self._font_module.load_default(size=px)
        return self._fonts[px]

    def box(self, x0, y0, x1, y1, fill=None, outline=None, width=1.0, radius=6.0):
        s = SUPERSAMPLE
        self.draw.rounded_rectangle(
            (x0 * s, y0 * s, x1 * s, y1 * s),
            radius=radius * s,
            fill=fill,
            outline=outline,
            width=max(1, int(width * s)),
        )

    def text(self, x, y, text, size=14, fill=INK, anchor="la"):
        s = SUPERSAMPLE
        self.draw.text((x * s, y * s), text, font=self.font(size), fill=fill, anchor=anchor)

    def text_width(self, text, size=14) -> float:
        return self.draw.textlength(text, font=self.font(size)) / SUPERSAMPLE

    def card(self, identity: str | None, x, y, w):
        """A card of width ``w`` at (x, y): its face, or the back when ``identity`` is None."""
        k = w / CARD_WIDTH
        h = CARD_HEIGHT * k
        if identity is None:
            self.box(x, y, x + w, y + h, fill=BACK, outline="#0d1626", width=2 * k, radius=10 * k)
            self.box(
                x + 10 * k, y + 10 * k, x + w - 10 * k, y + h - 10 * k, outline="#8fa3c4", width=1.5 * k, radius=6 * k
            )
            self.text(x + w / 2, y + h / 2, "?", 40 * k, "#8fa3c4", "mm")
            return
        art = card_art(identity)
        self.box(x, y, x + w, y + h, fill=PAPER, outline=art.colour, width=4 * k, radius=10 * k)
        self.box(x + 8 * k, y + 8 * k, x + w - 8 * k, y + 30 * k, fill=art.colour, radius=5 * k)
        self.text(x + 14 * k, y + 19 * k, art.code, 14 * k, text_colour_on(art.colour), "lm")
        for shape in art.shapes:
            self._shape(shape, x, y, k)
        self.box(
            x + 8 * k,
            y + h - 32 * k,
            x + w - 8 * k,
            y + h - 8 * k,
            fill="#ffffff",
            outline=art.colour,
            width=2 * k,
            radius=5 * k,
        )
        size = 13 * k if len(art.label) <= 10 else 10 * k
        self.text(x + w / 2, y + h - 20 * k, art.label, size, INK, "mm")

    def _shape(self, shape, x, y, k):
        s = SUPERSAMPLE
        p = shape.points
        width = max(1, int(round(shape.width * k * s)))
        if shape.kind == "ellipse":
            cx, cy, rx, ry = (v * k * s for v in p)
            bbox = (x * s + cx - rx, y * s + cy - ry, x * s + cx + rx, y * s + cy + ry)
            self.draw.ellipse(bbox, fill=shape.fill, outline=shape.stroke, width=width if shape.stroke else 0)
            return
        points = [(x * s + p[i] * k * s, y * s + p[i + 1] * k * s) for i in range(0, len(p), 2)]
        if shape.kind == "polygon":
            self.draw.polygon(points, fill=shape.fill, outline=shape.stroke, width=width if shape.stroke else 0)
        else:
            self.draw.line(points, fill=shape.stroke, width=width, joint="curve")

    def chip(self, identity: str, count: int, x, y, w=70.0, h=22.0):
        """A collection entry: the creature's colour and code, its name and the count."""
        art = card_art(identity)
        self.box(x, y, x + w, y + h, fill="#ffffff", outline=art.colour, width=2, radius=4)
        self.box(x, y, x + h + 4, y + h, fill=art.colour, radius=4)
        self.text(x + (h + 4) / 2, y + h / 2, art.code, 11, text_colour_on(art.colour), "mm")
        name = label_of(identity).replace("royal ", "R.")
        self.text(x + h + 8, y + h / 2, name[: 10 if w > 80 else 5], 10, INK, "lm")
        self.text(x + w - 5, y + h / 2, str(count), 13, INK, "rm")

    def array(self) -> np.ndarray:
        small = self.image.reduce(SUPERSAMPLE)  # box-average antialiasing; several times faster than a Lanczos resize
        return np.asarray(small, dtype=np.uint8).copy()


def _layout(others: int) -> list[tuple[float, float]]:
    """Top-left corners of the panels of the other seats, clockwise from the viewer's left."""
    left, right = (20, 240), (680, 240)
    top = {1: [(350, 50)], 2: [(185, 50), (515, 50)], 3: [(20, 50), (350, 50), (680, 50)]}
    if others <= 2:
        return top[others]
    if others == 3:
        return [left, (350, 50), right]
    if others == 4:
        return [left, (185, 50), (515, 50), right]
    return [left, *top[3], right]


PANEL_W, PANEL_H = 300, 150


def draw_table(view: dict[str, Any]) -> np.ndarray:
    """The picture of a ``seat_view`` as an (H, W, 3) uint8 array."""
    canvas = _Canvas()
    canvas.box(8, 36, WIDTH - 8, HEIGHT - 8, fill=FELT_DARK, radius=40)
    players = view["players"]
    viewer = view["viewer"]
    bottom = viewer if viewer is not None else players[0]
    start = players.index(bottom)
    others = [players[(start + k) % len(players)] for k in range(1, len(players))]
    title = f"Cockroach Poker - {view['edition']}, {view['num_players']} players"
    who = f"seen by {viewer}" if viewer is not None else "spectator view (public information)"
    if view["full_information"]:
        who = "FULL INFORMATION (every hidden card shown)"
    canvas.text(14, 18, title, 16, "#ffffff", "lm")
    canvas.text(WIDTH - 14, 18, who, 13, HIGHLIGHT if view["full_information"] else "#d8e6dc", "rm")
    for agent, (x, y) in zip(others, _layout(len(others))):
        _panel(canvas, view, agent, x, y)
    _panel(canvas, view, bottom, 350, 388)
    _chain(canvas, view)
    _hand(canvas, view)
    return canvas.array()


def _panel(canvas: _Canvas, view: dict[str, Any], agent: str, x: float, y: float) -> None:
    to_act = view["to_act"] == agent
    lost = view["loser"] == agent
    outline = LOSER if lost else HIGHLIGHT if to_act else "#c9c0a8"
    canvas.box(
        x, y, x + PANEL_W, y + PANEL_H, fill=PANEL, outline=outline, width=4 if (to_act or lost) else 1.5, radius=10
    )
    name = agent + (" (you)" if agent == view["viewer"] else "")
    canvas.text(x + 12, y + 16, name, 15, INK, "lm")
    status = "LOSES" if lost else "to act" if to_act else ""
    if status:
        canvas.text(x + PANEL_W - 12, y + 16, status, 13, LOSER if lost else "#7a5c00", "rm")
    stats = view["history"][agent]
    canvas.text(
        x + 12,
        y + 36,
        f"hand {view['hand_sizes'][agent]}  ·  calls {stats['right_calls']} right / {stats['wrong_calls']} wrong  "
        f"·  peeks {stats['peeks']}",
        11,
        "#444444",
        "lm",
    )
    collection = view["collections"][agent]
    if not collection:
        canvas.text(x + 12, y + 62, "collection empty", 11, "#777777", "lm")
    columns = 3 if len(collection) <= 9 else 4
    width = (PANEL_W - 16) / columns - 4
    for k, (identity, count) in enumerate(collection.items()):
        col, row = k % columns, k // columns
        canvas.chip(identity, count, x + 8 + col * (width + 4), y + 50 + row * 25, w=width)
    if view["full_information"]:
        hand = view["hands"][agent]
        text = ", ".join(f"{label_of(c)} {n}" for c, n in hand.items()) or "empty"
        canvas.text(x + 12, y + PANEL_H - 14, ("hand: " + text)[:60], 10, "#8a1c00", "lm")


def _chain(canvas: _Canvas, view: dict[str, Any]) -> None:
    x0, y0 = 350, 214
    chain = view["chain"]
    if view["loser"] is not None:
        canvas.box(x0, y0, x0 + 300, y0 + 160, fill="#ffffff", outline=LOSER, width=3, radius=10)
        canvas.text(x0 + 150, y0 + 60, f"{view['loser']} loses", 22, LOSER, "mm")
        canvas.text(x0 + 150, y0 + 96, f"({label_of(view['loss_reason'])})", 15, INK, "mm")
        return
    if view["to_act"] is None:  # ended by the env without a loss: a penalized illegal action or max_steps
        canvas.box(x0, y0, x0 + 300, y0 + 160, fill="#ffffff", outline=INK, width=3, radius=10)
        canvas.text(x0 + 150, y0 + 60, "game over", 22, INK, "mm")
        canvas.text(x0 + 150, y0 + 96, "(ended without a loss)", 15, INK, "mm")
        return
    if chain is None:
        canvas.text(x0 + 150, y0 + 70, f"{view['to_act']} offers a card", 16, "#ffffff", "mm")
    else:
        canvas.card(chain["card"], x0, y0 + 4, 100)
        tx = x0 + 112
        canvas.text(tx, y0 + 14, "card in play", 12, "#d8e6dc", "lm")
        canvas.text(tx, y0 + 36, f"claim: {label_of(chain['claim'])}", 16, "#ffffff", "lm")
        canvas.text(tx, y0 + 58, f"holder: {chain['holder']}", 12, "#ffffff", "lm")
        canvas.text(tx, y0 + 76, "seen by: " + ", ".join(chain["seen"]), 11, "#d8e6dc", "lm")
        for k, claim in enumerate(chain["claims"][-4:]):
            canvas.text(tx, y0 + 98 + 16 * k, f"{claim['player']} said {label_of(claim['claim'])}", 11, "#ffffff", "lm")
    if view["edition"] == "royal":
        canvas.text(
            x0 + 300,
            y0 + 150,
            f"penalty deck {view['penalty_size']}, "
            f"top: {label_of(view['penalty_top']) if view['penalty_top'] else '-'}",
            11,
            "#d8e6dc",
            "rm",
        )
    event = view["last_event"]
    if event is not None:
        canvas.text(WIDTH / 2, 376, describe_event(event), 12, "#ffffff", "mm")


def _hand(canvas: _Canvas, view: dict[str, Any]) -> None:
    hand = view["hand"]
    y = 546
    if hand is None:
        canvas.text(WIDTH / 2, y + 60, "spectator: no hand is shown", 14, "#d8e6dc", "mm")
        return
    if not hand:
        canvas.text(WIDTH / 2, y + 60, "your hand is empty", 14, "#d8e6dc", "mm")
        return
    count = len(hand)
    w = min(96.0, (WIDTH - 60) / count - 8)
    total = count * (w + 8) - 8
    x = (WIDTH - total) / 2
    top = HEIGHT - 16 - CARD_HEIGHT * w / CARD_WIDTH
    for identity, n in hand.items():
        canvas.card(identity, x, top, w)
        canvas.box(x + w - 26, top - 10, x + w + 4, top + 14, fill=INK, radius=10)
        canvas.text(x + w - 11, top + 2, f"{n}", 13, "#ffffff", "mm")
        x += w + 8
