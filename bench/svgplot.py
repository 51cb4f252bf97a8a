#!/usr/bin/env python3
"""Line plots as SVG from a CSV file, with nothing but the standard library.

    svgplot.py DATA.csv --x COLUMN --y COLUMN[,COLUMN...] [--series COLUMN]
               [--title TEXT] [--xlabel TEXT] [--ylabel TEXT] [--percent]
               [--ymin N] --out PLOT.svg

One line per --y column, or, with --series, one line per value of that column
(and per --y column when there are several). Rows are plotted in x order.
--percent shows fractions (0-1) as percentages. Bad input (a missing column, a
value that is not a number) is a one-line error naming the file and row.
"""
import argparse
import csv
import math
import sys
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 78, 200, 52, 62
COLOURS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"]
DASHES = ["", "6 3", "2 3", "8 3 2 3"]


def nice_step(span, target=6):
    raw = max(span, 1e-12) / target
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if multiple * magnitude >= raw:
            return multiple * magnitude
    return 10 * magnitude


def ticks(low, high):
    step = nice_step(high - low)
    first = math.floor(low / step) * step
    values, value = [], first
    while value <= high + step * 1e-6:
        values.append(round(value, 10))
        value += step
    return values


def label(value, percent):
    if percent:
        return f"{value * 100:g}%"
    return f"{value:g}"


def read_rows(path, columns):
    try:
        with open(path, newline="") as file:
            reader = csv.DictReader(row for row in file if not row.startswith("#"))
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                sys.exit(f"svgplot: {path}: no column {missing[0]!r} (columns: {', '.join(reader.fieldnames or [])})")
            return list(reader)
    except OSError as error:
        sys.exit(f"svgplot: {path}: {error.strerror}")


def number(path, row_number, column, text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        sys.exit(f"svgplot: {path}:{row_number}: {column}: {text!r} is not a number")
    if not math.isfinite(value):
        sys.exit(f"svgplot: {path}:{row_number}: {column}: {text!r} is not finite")
    return value


def collect(path, rows, x, ys, series):
    lines = {}
    for index, row in enumerate(rows, start=2):
        for y in ys:
            if row[y] in ("", "nan", "-"):
                continue  # a point not measured
            name = y if not series else (row[series] if len(ys) == 1 else f"{row[series]} {y}")
            lines.setdefault(name, []).append((number(path, index, x, row[x]), number(path, index, y, row[y])))
    for points in lines.values():
        points.sort()
    return lines


def render(lines, args):
    xs = [p[0] for points in lines.values() for p in points]
    ys = [p[1] for points in lines.values() for p in points]
    if not xs:
        sys.exit(f"svgplot: {args.csv}: no points to plot")
    x_ticks = ticks(min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1)
    y_low = args.ymin if args.ymin is not None else min(0.0, min(ys))
    y_ticks = ticks(y_low, max(ys) if max(ys) > y_low else y_low + 1)
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + (x - x0) / (x1 - x0) * plot_w

    def py(y):
        return TOP + plot_h - (y - y0) / (y1 - y0) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="28" font-size="15" font-weight="bold">{escape(args.title or "")}</text>']
    for value in y_ticks:
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{py(value):.1f}" y2="{py(value):.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{LEFT - 8}" y="{py(value) + 4:.1f}" font-size="11" text-anchor="end">'
                   f'{escape(label(value, args.percent))}</text>')
    for value in x_ticks:
        out.append(f'<line x1="{px(value):.1f}" x2="{px(value):.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 5}" stroke="#333"/>')
        out.append(f'<text x="{px(value):.1f}" y="{TOP + plot_h + 19}" font-size="11" text-anchor="middle">'
                   f'{escape(label(value, False))}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 18}" font-size="12" text-anchor="middle">'
               f'{escape(args.xlabel or args.x)}</text>')
    out.append(f'<text transform="translate(18,{TOP + plot_h / 2:.1f}) rotate(-90)" font-size="12" '
               f'text-anchor="middle">{escape(args.ylabel or ", ".join(args.y.split(",")))}</text>')
    for index, (name, points) in enumerate(lines.items()):
        colour = COLOURS[index % len(COLOURS)]
        dash = DASHES[(index // len(COLOURS)) % len(DASHES)]
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for i, (x, y) in enumerate(points))
        dash_attribute = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash_attribute}/>')
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}">'
                       f'<title>{escape(name)}: {label(x, False)}, {escape(label(y, args.percent))}</title></circle>')
        legend_y = TOP + 10 + 20 * index
        out.append(f'<line x1="{LEFT + plot_w + 14}" x2="{LEFT + plot_w + 38}" y1="{legend_y}" y2="{legend_y}" '
                   f'stroke="{colour}" stroke-width="2"{dash_attribute}/>')
        out.append(f'<text x="{LEFT + plot_w + 44}" y="{legend_y + 4}" font-size="11">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description="Line plots as SVG from a CSV file.")
    parser.add_argument("csv")
    parser.add_argument("--x", required=True)
    parser.add_argument("--y", required=True, help="one or more columns, comma-separated")
    parser.add_argument("--series", help="a column whose values make one line each")
    parser.add_argument("--title")
    parser.add_argument("--xlabel")
    parser.add_argument("--ylabel")
    parser.add_argument("--percent", action="store_true", help="y values are fractions: show percentages")
    parser.add_argument("--ymin", type=float)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ys = [y for y in args.y.split(",") if y]
    rows = read_rows(args.csv, [args.x] + ys + ([args.series] if args.series else []))
    svg = render(collect(args.csv, rows, args.x, ys, args.series), args)
    try:
        with open(args.out, "w") as file:
            file.write(svg)
    except OSError as error:
        sys.exit(f"svgplot: {args.out}: {error.strerror}")


if __name__ == "__main__":
    main()
