/*
 * view_time.c - the times --begin and --end accept:
 *
 *   2026-11-21T06:50:00.123456789   date and time (a space works as 'T')
 *   06:50:00[.frac], 06:50           time of day on the first event's day
 *   1795244400123456789              ns since the epoch (digits only)
 *   +1.5s +200ms +3us +10ns +2       after the first event (default unit s)
 *
 * Dates and times of day are in the local time zone, or UTC with
 * --clock-gmt, like the displayed times.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "view.h"

/* Digits at *s (at least one, at most max): value, *s advanced; -1 if none. */
static int64_t digits(const char **s, unsigned max)
{
	const char *p = *s;
	int64_t v = 0;
	unsigned n = 0;
	while (isdigit((unsigned char)*p) && n < max) {
		v = v * 10 + (*p++ - '0');
		n++;
	}
	if (!n)
		return -1;
	*s = p;
	return v;
}

/* ".frac" (1 to 9 digits) as ns, or 0 without a '.'; -1 if malformed. */
static int64_t fraction(const char **s)
{
	if (**s != '.')
		return 0;
	const char *p = *s + 1;
	int64_t v = 0, scale = 100000000;
	unsigned n = 0;
	while (isdigit((unsigned char)*p)) {
		if (++n > 9)
			return -1;
		v += (*p++ - '0') * scale;
		scale /= 10;
	}
	if (!n)
		return -1;
	*s = p;
	return v;
}

/* "HH:MM[:SS[.frac]]" at *s as ns of the day; -1 if malformed. */
static int64_t time_of_day(const char **s)
{
	int64_t h = digits(s, 2), m = -1, sec = 0, frac = 0;
	if (h < 0 || h > 23 || **s != ':')
		return -1;
	(*s)++;
	m = digits(s, 2);
	if (m < 0 || m > 59)
		return -1;
	if (**s == ':') {
		(*s)++;
		sec = digits(s, 2);
		if (sec < 0 || sec > 60)
			return -1;
		frac = fraction(s);
		if (frac < 0)
			return -1;
	}
	return ((h * 60 + m) * 60 + sec) * 1000000000 + frac;
}

static int relative(const char *s, struct view_time *t)
{
	const char *p = s + 1;
	int64_t whole = digits(&p, 15);
	if (whole < 0)
		return -1;
	int64_t frac = fraction(&p);	/* in ns, i.e. units of 1e-9 */
	if (frac < 0)
		return -1;
	static const struct {
		const char *suffix;
		int64_t ns;
	} units[] = { { "", 1000000000 }, { "s", 1000000000 }, { "ms", 1000000 },
		      { "us", 1000 }, { "ns", 1 } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix))
			continue;
		if ((units[i].ns == 1 && frac) || whole > INT64_MAX / units[i].ns / 2)
			return -1;
		t->kind = VIEW_TIME_RELATIVE;
		t->ns = whole * units[i].ns + frac / (1000000000 / units[i].ns);
		return 0;
	}
	return -1;
}

int view_time_parse(const char *s, struct view_time *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	const char *p = s;
	if (*s == '+') {
		if (relative(s, t) == 0)
			return 0;
		goto bad;
	}
	size_t nd = strspn(s, "0123456789");
	if (nd && !s[nd]) {
		errno = 0;
		unsigned long long v = strtoull(s, NULL, 10);
		if (errno || v > INT64_MAX)
			goto bad;
		t->kind = VIEW_TIME_EPOCH_NS;
		t->ns = (int64_t)v;
		return 0;
	}
	if (nd == 4 && s[4] == '-') {
		t->year = (int)digits(&p, 4);
		p++;
		t->month = (int)digits(&p, 2);
		if (*p++ != '-')
			goto bad;
		t->day = (int)digits(&p, 2);
		if (t->month < 1 || t->month > 12 || t->day < 1 || t->day > 31 ||
		    (*p != 'T' && *p != ' '))
			goto bad;
		p++;
		t->kind = VIEW_TIME_DATE;
	} else {
		t->kind = VIEW_TIME_OF_DAY;
	}
	t->ns = time_of_day(&p);
	if (t->ns < 0 || *p)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen,
		 "bad time '%s' (expected YYYY-MM-DDTHH:MM:SS[.frac], HH:MM[:SS[.frac]], "
		 "ns since the epoch, or +N[.frac][s|ms|us|ns])", s);
	t->kind = VIEW_TIME_NONE;
	return -EINVAL;
}

int64_t view_time_resolve(const struct view_time *t, int64_t first_ns, bool utc)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	switch (t->kind) {
	case VIEW_TIME_NONE:
		return 0;
	case VIEW_TIME_EPOCH_NS:
		return t->ns;
	case VIEW_TIME_RELATIVE:
		return first_ns + t->ns;
	case VIEW_TIME_DATE:
		tm.tm_year = t->year - 1900;
		tm.tm_mon = t->month - 1;
		tm.tm_mday = t->day;
		break;
	case VIEW_TIME_OF_DAY: {
		int64_t fs = first_ns / 1000000000 - (first_ns % 1000000000 < 0);
		time_t ft = (time_t)fs;
		if (!(utc ? gmtime_r(&ft, &tm) : localtime_r(&ft, &tm)))
			return first_ns;
		tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
		break;
	}
	}
	int64_t day_ns = t->ns;
	tm.tm_hour = (int)(day_ns / 3600000000000LL);
	tm.tm_min = (int)(day_ns / 60000000000LL % 60);
	tm.tm_sec = (int)(day_ns / 1000000000 % 60);
	tm.tm_isdst = -1;
	time_t sec = utc ? timegm(&tm) : mktime(&tm);
	return (int64_t)sec * 1000000000 + day_ns % 1000000000;
}
