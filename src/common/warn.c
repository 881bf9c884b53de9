/*
 * warn.c - warnings on standard error (see warn.h).
 */
#include "warn.h"

#include <stdio.h>
#include <unistd.h>

static const char *program = "ringtrace";

void rt_warn_program(const char *name)
{
	program = name;
}

void rt_vwarn(const char *fmt, va_list ap)
{
	char line[RT_WARN_MAX];
	int p = snprintf(line, sizeof(line), "%s: ", program);
	if (p < 0 || (size_t)p >= sizeof(line) - 1)
		return;
	int m = vsnprintf(line + p, sizeof(line) - (size_t)p, fmt, ap);
	if (m < 0)
		return;
	size_t n = (size_t)p + (size_t)m;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;	/* cut, keeping room for the newline */
	line[n++] = '\n';
	/* Nothing to do when standard error is gone. */
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}

void rt_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	rt_vwarn(fmt, ap);
	va_end(ap);
}

void rt_errf(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
