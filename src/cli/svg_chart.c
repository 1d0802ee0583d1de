/* Stacked bar charts as SVG. See svg_chart.h.
 *
 *   title / subtitle
 *   y axis with round ticks | groups of bars, each bar a stack of segments
 *                           | segment: its value inside (and its name when tall enough)
 *                           | total above each bar; category names right of the last bar */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/file_replace.h"
#include "svg_chart.h"

#define BAR_W 76.0
#define BAR_GAP 10.0   /* between bars of one group */
#define GROUP_GAP 40.0 /* between groups */
#define LEFT 78.0
#define RIGHT 150.0
#define TOP 78.0
#define PLOT_H 330.0
#define BOTTOM 64.0

static const char *const colors[ZERO_CHART_MAX_SEGMENTS] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#edc948", "#76b7b2", "#9c755f",
};

/* Text with &, < and > escaped. */
static void put_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else
            fputc(*s, f);
    }
}

static void text(FILE *f, double x, double y, const char *anchor, const char *style, const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" %s>", x, y, anchor, style);
    put_text(f, s);
    fputs("</text>\n", f);
}

/* A tick step of 1, 2 or 5 times a power of ten giving about five gridlines. */
static double tick_step(double max)
{
    if (max <= 0.0)
        return 1.0;
    double raw = max / 5.0, p = pow(10.0, floor(log10(raw)));
    double m = raw / p;
    return (m <= 1.0 ? 1.0 : m <= 2.0 ? 2.0 : m <= 5.0 ? 5.0 : 10.0) * p;
}

/* v rounded half up to c->decimals decimals, trailing zeros dropped: never an
 * exponent (2090, not 2.09e+03), the same digits as the text beside the chart. */
static void format_value(const struct zero_chart *c, double v, char *buf, size_t len)
{
    int d = c->decimals < 0 ? 0 : c->decimals > 6 ? 6 : c->decimals;
    double scale = pow(10.0, d);
    snprintf(buf, len, "%.*f", d, floor(v * scale + 0.5) / scale);
    if (strchr(buf, '.')) {
        char *end = buf + strlen(buf) - 1;
        while (*end == '0')
            *end-- = '\0';
        if (*end == '.')
            *end = '\0';
    }
}

/* Whether some bar (or bar b when b >= 0) has segment s. */
static int has_segment(const struct zero_chart *c, int s, int b)
{
    for (int i = b >= 0 ? b : 0; i < (b >= 0 ? b + 1 : c->nbars); i++)
        if (c->bar[i].value[s] > 0.0)
            return 1;
    return 0;
}

static double bar_total(const struct zero_chart *c, int b)
{
    double t = 0.0;
    for (int s = 0; s < c->nsegments; s++)
        t += c->bar[b].value[s];
    return t;
}

/* x of each bar's left edge; returns the plot width. */
static double place_bars(const struct zero_chart *c, double *x)
{
    double at = 24.0;
    for (int b = 0; b < c->nbars; b++) {
        if (b > 0)
            at += c->bar[b].group == c->bar[b - 1].group ? BAR_GAP : GROUP_GAP;
        x[b] = LEFT + at;
        at += BAR_W;
    }
    return at + 24.0;
}

static void draw_axis(FILE *f, const struct zero_chart *c, double plot_w, double ymax, double step)
{
    char buf[64];
    for (double v = 0.0; v <= ymax * (1 + 1e-9); v += step) {
        double y = TOP + PLOT_H - v / ymax * PLOT_H;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                LEFT, y, LEFT + plot_w, y);
        int d = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, sizeof buf, "%.*f", d, v); /* the step's decimals, never an exponent */
        text(f, LEFT - 6, y + 4, "end", "font-size=\"11\" fill=\"#555\"", buf);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n", LEFT,
            TOP + PLOT_H, LEFT + plot_w, TOP + PLOT_H);
    snprintf(buf, sizeof buf, "%s per rank", c->unit);
    fprintf(f,
            "<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\" "
            "font-size=\"12\" fill=\"#333\">",
            18.0, TOP + PLOT_H / 2);
    put_text(f, buf);
    fputs("</text>\n", f);
}

static void draw_bar(FILE *f, const struct zero_chart *c, int b, double x, double ymax)
{
    const struct zero_chart_bar *bar = &c->bar[b];
    double base = TOP + PLOT_H;
    char buf[96];
    for (int s = 0; s < c->nsegments; s++) {
        double h = bar->value[s] / ymax * PLOT_H;
        if (bar->value[s] <= 0.0)
            continue;
        double y = base - h;
        if (bar->hollow)
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\" "
                    "fill-opacity=\"0.25\" stroke=\"%s\" stroke-width=\"1.5\"/>\n",
                    x, y, BAR_W, h, colors[s], colors[s]);
        else
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.2f\" width=\"%.1f\" height=\"%.2f\" fill=\"%s\" "
                    "stroke=\"#fff\" stroke-width=\"0.5\"/>\n",
                    x, y, BAR_W, h, colors[s]);
        const char *ink = bar->hollow ? "fill=\"#222\"" : "fill=\"#fff\"";
        char style[96];
        format_value(c, bar->value[s], buf, sizeof buf);
        if (h >= 28.0) { /* name and value */
            snprintf(style, sizeof style, "font-size=\"11\" %s", ink);
            text(f, x + BAR_W / 2, y + h / 2 - 2, "middle", style, c->segment[s]);
            text(f, x + BAR_W / 2, y + h / 2 + 11, "middle", style, buf);
        } else if (h >= 13.0) { /* value only */
            snprintf(style, sizeof style, "font-size=\"10\" %s", ink);
            text(f, x + BAR_W / 2, y + h / 2 + 4, "middle", style, buf);
        }
        base = y;
    }
    char total[48];
    format_value(c, bar_total(c, b), total, sizeof total);
    snprintf(buf, sizeof buf, "%s %s", total, c->unit);
    text(f, x + BAR_W / 2, base - 5, "middle",
         "font-size=\"11\" font-weight=\"bold\" fill=\"#222\"", buf);
    text(f, x + BAR_W / 2, TOP + PLOT_H + 16, "middle", "font-size=\"12\" fill=\"#222\"",
         bar->label);
    text(f, x + BAR_W / 2, TOP + PLOT_H + 30, "middle", "font-size=\"11\" fill=\"#666\"",
         bar->sublabel);
}

/* Category names beside the last bar, at its segments' middles, pushed apart so
 * they never overlap; categories the last bar lacks go to a key at the top right. */
static void draw_direct_labels(FILE *f, const struct zero_chart *c, double x, double ymax,
                               double width)
{
    int last = c->nbars - 1;
    const struct zero_chart_bar *bar = &c->bar[last];
    double want[ZERO_CHART_MAX_SEGMENTS], at[ZERO_CHART_MAX_SEGMENTS];
    double base = TOP + PLOT_H, prev = TOP + PLOT_H + 14;
    for (int s = 0; s < c->nsegments; s++) {
        if (!has_segment(c, s, last))
            continue;
        double h = bar->value[s] / ymax * PLOT_H;
        want[s] = base - h / 2;
        base -= h;
        at[s] = want[s] < prev - 14 ? want[s] : prev - 14; /* bottom-up, 14 px apart */
        prev = at[s];
    }
    double key_y = 26.0;
    for (int s = 0; s < c->nsegments; s++) {
        char style[64];
        snprintf(style, sizeof style, "font-size=\"12\" fill=\"%s\"", colors[s]);
        if (!has_segment(c, s, last)) {
            if (!has_segment(c, s, -1))
                continue; /* no bar has it: not named */
            fprintf(f,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" "
                    "fill=\"%s\"/>\n",
                    width - 130, key_y - 9, colors[s]);
            text(f, width - 115, key_y, "start", style, c->segment[s]);
            key_y += 16;
            continue;
        }
        double lx = x + BAR_W + 6;
        fprintf(f,
                "<polyline points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"none\" "
                "stroke=\"%s\"/>\n",
                x + BAR_W, want[s], lx + 6, at[s], lx + 12, at[s], colors[s]);
        text(f, lx + 15, at[s] + 4, "start", style, c->segment[s]);
    }
}

int zero_svg_chart_fprint(FILE *out, const struct zero_chart *c, struct zero_error *err)
{
    if (c->nbars < 1 || c->nbars > ZERO_CHART_MAX_BARS || c->nsegments < 1 ||
        c->nsegments > ZERO_CHART_MAX_SEGMENTS)
        return zero_fail(err, ZERO_EINVAL, "svg chart: %d bars and %d segments (1-%d and 1-%d)",
                         c->nbars, c->nsegments, ZERO_CHART_MAX_BARS, ZERO_CHART_MAX_SEGMENTS);
    double x[ZERO_CHART_MAX_BARS];
    double plot_w = place_bars(c, x);
    double max = 0.0;
    for (int b = 0; b < c->nbars; b++)
        max = fmax(max, bar_total(c, b));
    double step = tick_step(max * 1.1);
    double ymax = step * ceil(max * 1.1 / step);
    if (ymax <= 0.0)
        ymax = 1.0;
    double width = LEFT + plot_w + RIGHT, height = TOP + PLOT_H + BOTTOM;
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n",
            width, height, width, height);
    text(out, 16, 26, "start", "font-size=\"16\" font-weight=\"bold\" fill=\"#111\"", c->title);
    text(out, 16, 46, "start", "font-size=\"12\" fill=\"#555\"", c->subtitle);
    draw_axis(out, c, plot_w, ymax, step);
    for (int b = 0; b < c->nbars; b++)
        draw_bar(out, c, b, x[b], ymax);
    draw_direct_labels(out, c, x[c->nbars - 1], ymax, width);
    fputs("</svg>\n", out);
    return ferror(out) ? zero_fail(err, ZERO_EIO, "svg chart: write failed") : ZERO_OK;
}

int zero_svg_chart_write(const char *path, const struct zero_chart *c, struct zero_error *err)
{
    struct zero_replace out;
    FILE *f = NULL;
    int rc = zero_replace_begin(&out, path, err);
    if (!rc && !(f = zero_replace_stream(&out, err)))
        rc = err->code;
    if (!rc)
        rc = zero_svg_chart_fprint(f, c, err);
    if (!rc)
        rc = zero_replace_commit(&out, err);
    else
        zero_replace_abort(&out); /* path untouched */
    if (rc && strncmp(err->msg, path, strlen(path)) != 0)
        zero_error_wrap(err, "%s: ", path);
    return rc;
}
