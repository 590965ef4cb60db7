package simulate

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// The SVG chart: one panel per run (a series), sharing the time axis and
// the scale, each a bar per bucket of its admitted calls in the run's
// colour with the denied ones stacked above in a pale red. Hand-written,
// deterministic (the same report gives the same bytes), no scripts.
const (
	svgWidth    = 960
	svgLeft     = 64
	svgRight    = 16
	svgTop      = 92
	svgPanelH   = 120
	svgPanelGap = 48
	svgBottom   = 40
)

// seriesColors are the runs' colours, in order (a colour-blind-safe set).
var seriesColors = []string{"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000"}

const deniedColor = "#f3b3b3"

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// scale picks the y axis for a peak: a step of 1, 2 or 5 times a power
// of ten giving at most four steps, and the top, a whole number of steps.
func scale(peak int64) (step, top int64) {
	step = 1
	for p := int64(1); step*4 < peak; p *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if step = m * p; step*4 >= peak {
				break
			}
		}
	}
	top = max((peak+step-1)/step, 1) * step
	return step, top
}

// writeSVG draws rep.
func writeSVG(w io.Writer, rep Report) error {
	var b bytes.Buffer
	n := 0
	if len(rep.Runs) > 0 {
		n = len(rep.Runs[0].Buckets)
	}
	var peak int64
	for _, run := range rep.Runs {
		for _, bk := range run.Buckets {
			peak = max(peak, bk.Allowed+bk.Denied)
		}
	}
	step, ymax := scale(peak)
	plotW := float64(svgWidth - svgLeft - svgRight)
	height := svgTop + len(rep.Runs)*(svgPanelH+svgPanelGap) - svgPanelGap + svgBottom
	width, _ := time.ParseDuration(rep.Bucket)
	multiDay := rep.Trace.Last.Sub(rep.Trace.First) >= day || rep.Trace.First.YearDay() != rep.Trace.Last.YearDay()
	title := fmt.Sprintf("Calls admitted per %s bucket, by algorithm", rep.Bucket)

	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s" font-family="sans-serif" font-size="12">
<title>%s</title>
<rect width="100%%" height="100%%" fill="#ffffff"/>
<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>
<text x="%d" y="44" fill="#444444">%s: %d calls from %s (UTC). Solid: admitted; pale red above: denied.</text>
`, svgWidth, height, svgWidth, height, esc(title), esc(title), svgLeft, esc(title),
		svgLeft, esc(filepath.Base(rep.Trace.File)), rep.Trace.Calls, rep.Trace.First.Format(time.RFC3339Nano))

	barW := plotW
	if n > 0 {
		barW = plotW / float64(n)
	}
	gap := min(barW*0.15, 2)
	for i, run := range rep.Runs {
		color := seriesColors[i%len(seriesColors)]
		y0 := float64(svgTop + i*(svgPanelH+svgPanelGap))
		base := y0 + svgPanelH
		fmt.Fprintf(&b, `<g class="series" data-run="%s">
<title>%s: %d of %d calls admitted</title>
<text x="%d" y="%.1f" font-weight="bold" fill="%s">%s</text>
<text x="%d" y="%.1f" text-anchor="end" fill="#444444">%d of %d admitted, %.1f%% denied</text>
`, esc(run.Name), esc(run.Name), run.Allowed, run.Calls, svgLeft, y0-16, color, esc(run.Name),
			svgWidth-svgRight, y0-16, run.Allowed, run.Calls, 100*run.DenialRate)
		// The scale: a grid line per step.
		for v := int64(0); v <= ymax; v += step {
			y := base - float64(v)/float64(ymax)*svgPanelH
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e0e0e0"/>
<text x="%d" y="%.1f" text-anchor="end" fill="#444444">%d</text>
`, svgLeft, y, svgWidth-svgRight, y, svgLeft-6, y+4, v)
		}
		for j, bk := range run.Buckets {
			x := float64(svgLeft) + float64(j)*barW + gap/2
			ha := float64(bk.Allowed) / float64(ymax) * svgPanelH
			hd := float64(bk.Denied) / float64(ymax) * svgPanelH
			if bk.Allowed > 0 {
				fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>
`, x, base-ha, barW-gap, ha, color)
			}
			if bk.Denied > 0 {
				fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"/>
`, x, base-ha-hd, barW-gap, hd, deniedColor)
			}
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#888888"/>
</g>
`, svgLeft, base, svgWidth-svgRight, base)
	}
	// The time axis, under the last panel: at most ten labels.
	if n > 0 {
		step := (n + 9) / 10
		y := float64(svgTop+len(rep.Runs)*(svgPanelH+svgPanelGap)-svgPanelGap) + 18
		for j := 0; j < n; j += step {
			x := float64(svgLeft) + float64(j)*barW
			label := bucketLabel(rep.Runs[0].Buckets[j].Start, width, multiDay)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#444444">%s</text>
`, x, y, esc(label))
		}
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}
