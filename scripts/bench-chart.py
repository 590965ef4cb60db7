#!/usr/bin/env python3
"""bench-chart.py: an SVG bar chart of the table scripts/bench-envoy-ratelimit.sh prints.

    scripts/bench-chart.py "title" < table.md > chart.svg

Reads the markdown rows (target | call | streams | decisions/s | ...) and
draws decisions/s per target, grouped by streams. Python 3 standard library
only, so it runs wherever the benchmark does.
"""
import sys

COLORS = ["#555555", "#1f77b4", "#6baed6", "#d62728", "#ff9896", "#2ca02c", "#98df8a"]


def rows(lines):
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or not cells[2].isdigit():
            continue
        yield cells[0], int(cells[2]), float(cells[3].replace(",", ""))


def main():
    title = sys.argv[1] if len(sys.argv) > 1 else "decisions/s"
    data = list(rows(sys.stdin))
    if not data:
        sys.exit("bench-chart: no table rows on stdin")
    targets = list(dict.fromkeys(t for t, _, _ in data))
    streams = sorted(set(s for _, s, _ in data))
    value = {(t, s): v for t, s, v in data}
    top = max(v for _, _, v in data)
    step = 10 ** (len(str(int(top))) - 1)
    ceil = (int(top / step) + 1) * step
    W, H, left, right, bottom, topm = 760, 380, 70, 170, 330, 40
    plot_h = bottom - topm
    group_w = (W - left - right) / len(streams)
    bar_w = group_w * 0.8 / len(targets)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           'font-family="sans-serif" font-size="12">', f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{(W - right + left) / 2:.1f}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for i in range(0, 6):
        v = ceil * i / 5
        y = bottom - plot_h * v / ceil
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{W - right}" y2="{y:.1f}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{int(v):,}</text>')
    for gi, s in enumerate(streams):
        x0 = left + gi * group_w + group_w * 0.1
        for ti, t in enumerate(targets):
            v = value.get((t, s))
            if v is None:
                continue
            h = plot_h * v / ceil
            x = x0 + ti * bar_w
            out.append(f'<rect x="{x:.1f}" y="{bottom - h:.1f}" width="{bar_w - 2:.1f}" height="{h:.1f}" '
                       f'fill="{COLORS[ti % len(COLORS)]}"><title>{t}, {s} streams: {v:,.0f}/s</title></rect>')
        out.append(f'<text x="{x0 + group_w * 0.4:.1f}" y="{bottom + 18}" text-anchor="middle">{s} stream{"s" if s != 1 else ""}</text>')
    out.append(f'<text x="16" y="{(bottom + topm) / 2:.1f}" transform="rotate(-90 16 {(bottom + topm) / 2:.1f})" '
               'text-anchor="middle">decisions/s</text>')
    for ti, t in enumerate(targets):
        y = topm + 10 + ti * 20
        out.append(f'<rect x="{W - right + 14}" y="{y - 10}" width="12" height="12" fill="{COLORS[ti % len(COLORS)]}"/>')
        out.append(f'<text x="{W - right + 32}" y="{y}">{t}</text>')
    out.append("</svg>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
