/*
 * extremes.c - records floating-point values that no integer can hold
 * (NaN, infinities, magnitudes past 2^63, the largest finite values,
 * negative zero, the smallest subnormal) so that the reader test checks
 * rt_reader decodes them as babeltrace2 does, and that decoding them is
 * defined behaviour (the sanitizer build runs the test).
 *
 * usage: extremes
 */
#include <float.h>
#include <math.h>

#include <ringtrace/ringtrace.h>

int main(void)
{
	rt_event(extremes, doubles, qnan, (double)NAN, neg_qnan, -(double)NAN,
		 inf, (double)INFINITY, neg_inf, -(double)INFINITY, big, 1e300,
		 neg_big, -1e300, two63, 0x1p63, max, DBL_MAX, neg_zero, -0.0,
		 tiny, 0x1p-1074);
	rt_event(extremes, floats, qnan, (float)NAN, inf, (float)INFINITY,
		 neg_inf, -(float)INFINITY, big, 1e38f, max, FLT_MAX, neg_zero, -0.0f);
	return 0;
}
