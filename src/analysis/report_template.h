/*
 * report_template.h - the HTML report page (report_template.html), built
 * into the program by embed.cmake. Hidden symbol, used by report.c only.
 */
#ifndef RINGTRACE_REPORT_TEMPLATE_H
#define RINGTRACE_REPORT_TEMPLATE_H

/* The page, NUL-terminated; the data goes where RA_REPORT_MARKER is. */
extern const char ra_report_template[];
#define RA_REPORT_MARKER "@RINGTRACE_DATA@"

#endif /* RINGTRACE_REPORT_TEMPLATE_H */
