/*
 * probed.c - a program built without ringtrace, for the user-space
 * probes' tests (test_probes.py compiles it with -g): functions whose
 * calls the probes record with their arguments and return values, and an
 * SDT probe with a semaphore, written as systemtap's <sys/sdt.h> writes
 * one (a .note.stapsdt note, .stapsdt.base; the header is not needed).
 *
 * usage: probed N   calls add(i, -5 * i, p) and scale(i, 1.5, -i) for
 *                   i = 0..N-1, then fires the SDT probe rtprobed:tick(i,
 *                   i * 1000) when its semaphore says it is enabled,
 *                   and rtprobed:vars (the running sum of i, 7 + i + 1,
 *                   an array element, i) when its own says so; prints
 *                   the number of ticks fired.
 */
#include <stdio.h>
#include <stdlib.h>

/* The SDT probe's semaphore: the kernel counts the uprobes on it. */
__extension__ unsigned short rtprobed_tick_semaphore __attribute__((section(".probes"), used));

#define SDT_NOTE(provider, name, args)                                         \
	"990: nop\n"                                                           \
	".pushsection .note.stapsdt,\"?\",\"note\"\n"                          \
	".balign 4\n"                                                          \
	".4byte 992f-991f, 994f-993f, 3\n"                                     \
	"991: .asciz \"stapsdt\"\n"                                            \
	"992: .balign 4\n"                                                     \
	"993: .8byte 990b\n"                                                   \
	".8byte _.stapsdt.base\n"                                              \
	".8byte " #provider "_" #name "_semaphore\n"                           \
	".asciz \"" #provider "\"\n"                                           \
	".asciz \"" #name "\"\n"                                               \
	".asciz \"" args "\"\n"                                                \
	"994: .balign 4\n"                                                     \
	".popsection\n"                                                        \
	".ifndef _.stapsdt.base\n"                                             \
	".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n" \
	".weak _.stapsdt.base\n"                                               \
	".hidden _.stapsdt.base\n"                                             \
	"_.stapsdt.base: .space 1\n"                                           \
	".size _.stapsdt.base, 1\n"                                            \
	".popsection\n"                                                        \
	".endif\n"

/* An SDT probe with two register operands. */
#define SDT_PROBE2(provider, name, a1, a2)                                     \
	__asm__ __volatile__(SDT_NOTE(provider, name, "-4@%[x1] 8@%[x2]")      \
			     ::[x1] "r"(a1), [x2] "r"(a2))

/* rtprobed:vars: variables as gcc writes their "m" operands, as
 * <sys/sdt.h>'s probes get them: a zero-initialized global (.bss) and an
 * initialized static (.data), both "NAME(%rip)", an array element by a
 * variable index ("(%rax,%rdx,8)": a uprobe cannot compute it), then a
 * register. */
__extension__ unsigned short rtprobed_vars_semaphore __attribute__((section(".probes"), used));
long rtprobed_total;
static int rtprobed_base = 7;
long rtprobed_hist[8];


/* Not inlined nor changed by interprocedural optimisation: probed as
 * they are written. */
int add(int a, long b, const char *p) __attribute__((noinline, noipa));
short scale(unsigned char c, double d, short s) __attribute__((noinline, noipa));

int add(int a, long b, const char *p)
{
	return a + (int)b + (p ? 1 : 0);
}

/* A double between two integers: it goes in an SSE register, s in the
 * second integer register. */
short scale(unsigned char c, double d, short s)
{
	return (short)(c * d) + s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3, ticks = 0;
	long sum = 0;
	for (int i = 0; i < n; i++) {
		sum += add(i, -5L * i, i % 2 ? "odd" : NULL);
		sum += scale((unsigned char)i, 1.5, (short)-i);
		rtprobed_total += i;
		rtprobed_hist[i & 7] += i;
		rtprobed_base++;
		if (rtprobed_vars_semaphore)
			__asm__ __volatile__(SDT_NOTE(rtprobed, vars,
						      "8@%[x1] -4@%[x2] -8@%[x3] -4@%[x4]")
					     ::[x1] "m"(rtprobed_total), [x2] "m"(rtprobed_base),
					      [x3] "m"(rtprobed_hist[i & 7]), [x4] "r"(i));
		if (rtprobed_tick_semaphore) {
			long big = i * 1000L;
			SDT_PROBE2(rtprobed, tick, i, big);
			ticks++;
		}
	}
	printf("%d %ld\n", ticks, sum);
	return 0;
}
