/* pl_lib.so - a library pl_dl loads with dlopen (its build id is
 * checked against readelf's, test_preload.py). */
__attribute__((visibility("default"))) int pl_lib_answer(void);
int pl_lib_answer(void)
{
	return 42;
}
