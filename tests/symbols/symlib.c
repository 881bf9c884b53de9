/*
 * symlib.c - the shared object symapp loads with dlopen: one function
 * that records an event (its ip context is in lib_work).
 */
#include <ringtrace/ringtrace.h>

__attribute__((noinline, visibility("default"))) void lib_work(int n);
__attribute__((noinline)) void lib_work(int n)
{
	rt_event(symlib, lib_work, n, n);
	__asm__ volatile("" ::: "memory");	/* not a tail call */
}
