"""The call-site ABI version the library and the daemon were built with
(RT_ABI_VERSION in include/ringtrace/ringtrace_types.h): what a program's
REGISTER message carries."""
import os
import re

_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "../../include/ringtrace/ringtrace_types.h")

with open(_HEADER) as _f:
    RT_ABI_VERSION = int(re.search(r"#define RT_ABI_VERSION (\d+)", _f.read()).group(1))
