/* Stacked bar charts as standalone SVG, for the per-rank memory of stages 0-3
 * (zero estimate --svg, zero memory --svg). Every segment carries its own label
 * (its category and value) when it is tall enough; the categories are also named
 * directly beside the last bar, so the chart reads without a legend; a category
 * the last bar lacks is named in a key at the top right, one no bar has is not
 * named at all. */
#ifndef ZERO_SVG_CHART_H
#define ZERO_SVG_CHART_H

#include <stdio.h>

#include "zero/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_CHART_MAX_SEGMENTS 8
#define ZERO_CHART_MAX_BARS 16

struct zero_chart_bar {
    char label[48];    /* first line under the bar, e.g. "stage 1" */
    char sublabel[48]; /* second line, e.g. "measured" or "theory" */
    int group;         /* bars of one group stand side by side, groups apart */
    int hollow;        /* draw the segments as outlines (e.g. theory next to measurement) */
    double value[ZERO_CHART_MAX_SEGMENTS]; /* in the chart's unit, bottom segment first */
};

struct zero_chart {
    char title[160];
    char subtitle[240];
    char unit[16]; /* "GB", "MiB", ... */
    int decimals;  /* values and totals rounded half up to this many decimals, trailing
                      zeros dropped (1: 1.9, 31.4, 120), as the text next to the chart */
    int nsegments;
    char segment[ZERO_CHART_MAX_SEGMENTS][32]; /* category names, bottom first */
    int nbars;
    struct zero_chart_bar bar[ZERO_CHART_MAX_BARS];
};

/* Writes the chart as an SVG document to out. */
int zero_svg_chart_fprint(FILE *out, const struct zero_chart *c, struct zero_error *err);
/* The same into a file (created or truncated). */
int zero_svg_chart_write(const char *path, const struct zero_chart *c, struct zero_error *err);

#ifdef __cplusplus
}
#endif

#endif
