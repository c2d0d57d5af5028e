"""The terminal view's colours: a line colour per picked run, the state colours made to read on a
light terminal too, and the heat scale of the system tab's heatmaps.

Two palettes of ten, told apart by everyone who can tell colours apart at all: ``tableau`` (the
dashboard's, so a run looks the same in both) and ``colorblind`` (Okabe and Ito's, told apart with
any of the common colour-vision deficiencies too; its yellow last, as it reads poorly on white).
"""

from __future__ import annotations

from ..states import COLOURS

PALETTES: dict[str, tuple[tuple[int, int, int], ...]] = {
    "tableau": (
        (0x4E, 0x79, 0xA7),
        (0xF2, 0x8E, 0x2B),
        (0xE1, 0x57, 0x59),
        (0x76, 0xB7, 0xB2),
        (0x59, 0xA1, 0x4F),
        (0xED, 0xC9, 0x48),
        (0xB0, 0x7A, 0xA1),
        (0xFF, 0x9D, 0xA7),
        (0x9C, 0x75, 0x5F),
        (0xBA, 0xB0, 0xAC),
    ),
    "colorblind": (
        (0x00, 0x72, 0xB2),
        (0xE6, 0x9F, 0x00),
        (0x00, 0x9E, 0x73),
        (0xD5, 0x5E, 0x00),
        (0x56, 0xB4, 0xE9),
        (0xCC, 0x79, 0xA7),
        (0x00, 0x00, 0x00),
        (0x99, 0x99, 0x99),
        (0x88, 0x22, 0x55),
        (0xF0, 0xE4, 0x42),
    ),
}

#: viridis at five points: sequential, even in lightness, read alike by the colour-blind
VIRIDIS: tuple[tuple[int, int, int], ...] = (
    (0x44, 0x01, 0x54),
    (0x3B, 0x52, 0x8B),
    (0x21, 0x91, 0x8C),
    (0x5E, 0xC9, 0x62),
    (0xFD, 0xE7, 0x25),
)

#: a state's colour on a light background, where the terminal's bright ones wash out
_ON_LIGHT = {
    "cyan": "dark_cyan",
    "green": "dark_green",
    "yellow": "dark_goldenrod",
    "magenta": "dark_magenta",
}


def line_colour(palette: str, index: int) -> tuple[int, int, int]:
    """The colour of the ``index``-th picked run's line."""
    colours = PALETTES[palette]
    return colours[index % len(colours)]


def hex_colour(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def state_colour(state: str, dark: bool) -> str:
    """The colour a state is written in (``states.COLOURS``), darker on a light background."""
    colour = COLOURS.get(state, "")
    return colour if dark else _ON_LIGHT.get(colour, colour)


def heat_colour(fraction: float, dark: bool) -> tuple[int, int, int]:
    """The colour of ``fraction`` (0 to 1, clipped) on the heat scale: viridis, dark to light on a dark
    background and light to dark on a light one, so that a busy GPU stands out from the background
    and an idle one recedes into it on either."""
    at = min(max(fraction, 0.0), 1.0)
    at = (at if dark else 1.0 - at) * (len(VIRIDIS) - 1)
    i = min(int(at), len(VIRIDIS) - 2)
    low, high = VIRIDIS[i], VIRIDIS[i + 1]
    r, g, b = (round(a + (z - a) * (at - i)) for a, z in zip(low, high))
    return r, g, b
