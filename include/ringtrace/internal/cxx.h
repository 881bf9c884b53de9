/*
 * cxx.h - INTERNAL, not API: what rt_event expands to in C++
 * (<ringtrace/ringtrace.h> includes it last when __cplusplus is defined). C
 * infers a field's type with _Generic; C++ has no _Generic, so the same
 * table is a class template here, looked up with the value's decayed type
 * (decltype), and `auto` stands for __auto_type. Every value type is
 * recorded as in C (docs/instrumenting.md), and an enumeration as its
 * underlying integer type (C's enumerations are integers already);
 * rt_printf's format field (struct rt__printf_format) as in C. Any
 * other type (a class such as std::string, long double, nullptr, wchar_t,
 * char8_t to char32_t) is refused at compile time with rt_event's message
 * "field 'NAME' has an unsupported type".
 *
 * Registration: a C call site lists its descriptor in the module's
 * rt_events section (ringtrace.h), which the module's constructor
 * registers. GCC cannot put there both the descriptors of plain
 * functions and those of inline functions and templates, which C++
 * programs have (they live in COMDAT groups, and one named section cannot
 * hold both kinds: "section type conflict"). So a C++ call site registers
 * itself instead: RT__SITE names the static member `reg` of
 * rt__cxx_site<&descriptor>, whose constructor calls rt__register when
 * the module is loaded (before main, or in dlopen) and whose destructor
 * calls rt__unregister when it is unloaded (exit, dlclose). One object per
 * call site, whichever translation units emit it; the call site itself
 * runs no code for it (rt_event's cost is C's).
 *
 * Nothing here runs in the call site: types, constants and constant
 * expressions only.
 */
#ifndef RINGTRACE_INTERNAL_CXX_H
#define RINGTRACE_INTERNAL_CXX_H

#include <type_traits>

#include <ringtrace/ringtrace_types.h>

/* The field type of a value of type T (decayed: no reference, no
 * cv-qualifier, arrays and functions as pointers), 0 when rt_event cannot
 * record it. Pointers other than to char are addresses. */
template <typename T, typename = void> struct rt__cxx_type {
	static constexpr uint32_t value = std::is_pointer<T>::value ? RT_TYPE_POINTER : 0;
};
template <typename T>
struct rt__cxx_type<T, typename std::enable_if<std::is_enum<T>::value>::type>
	: rt__cxx_type<typename std::underlying_type<T>::type> {};

#define RT__CXX_TYPE(type, field)                                              \
	template <> struct rt__cxx_type<type> {                                \
		static constexpr uint32_t value = (field);                     \
	};
RT__CXX_TYPE(bool, RT_TYPE_BOOL)
RT__CXX_TYPE(char, std::is_signed<char>::value ? RT_TYPE_S8 : RT_TYPE_U8)
RT__CXX_TYPE(signed char, RT_TYPE_S8)
RT__CXX_TYPE(unsigned char, RT_TYPE_U8)
RT__CXX_TYPE(short, RT_TYPE_S16)
RT__CXX_TYPE(unsigned short, RT_TYPE_U16)
RT__CXX_TYPE(int, RT_TYPE_S32)
RT__CXX_TYPE(unsigned int, RT_TYPE_U32)
RT__CXX_TYPE(long, sizeof(long) == 8 ? RT_TYPE_S64 : RT_TYPE_S32)
RT__CXX_TYPE(unsigned long, sizeof(long) == 8 ? RT_TYPE_U64 : RT_TYPE_U32)
RT__CXX_TYPE(long long, RT_TYPE_S64)
RT__CXX_TYPE(unsigned long long, RT_TYPE_U64)
RT__CXX_TYPE(float, RT_TYPE_FLOAT)
RT__CXX_TYPE(double, RT_TYPE_DOUBLE)
RT__CXX_TYPE(char *, RT_TYPE_STRING)
RT__CXX_TYPE(const char *, RT_TYPE_STRING)
RT__CXX_TYPE(struct rt_bytes, RT_TYPE_BYTES)
RT__CXX_TYPE(struct rt__printf_format, RT_TYPE_FORMAT)
#undef RT__CXX_TYPE

/* What ringtrace.h's C branch defines with _Generic (see there). */
#define RT__TYPE(x) (rt__cxx_type<typename std::decay<decltype(x)>::type>::value)
#define RT__DISPATCH(x, fixed, str, bytes)                                     \
	(RT__TYPE(x) == RT_TYPE_STRING ? (str)                                 \
	 : RT__TYPE(x) == RT_TYPE_BYTES ? (bytes) : (fixed))
#define RT__SUPPORTED(v) (RT__TYPE(v) != 0)
#define RT__AUTO auto

template <struct rt_event_desc *E> struct rt__cxx_site {
	rt__cxx_site() { rt__register(list, list + 1); }
	~rt__cxx_site() { rt__unregister(list, list + 1); }
	rt__cxx_site(const rt__cxx_site &) = delete;
	rt__cxx_site &operator=(const rt__cxx_site &) = delete;
	static constexpr struct rt_event_desc *const list[1] = { E };
	static rt__cxx_site reg;
};
template <struct rt_event_desc *E> rt__cxx_site<E> rt__cxx_site<E>::reg;
#define RT__SITE(ev) (void)&rt__cxx_site<&ev>::reg;

#endif /* RINGTRACE_INTERNAL_CXX_H */
