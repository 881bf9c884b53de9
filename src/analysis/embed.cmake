# Turn the file IN into a C source OUT defining `const char NAME[]` with
# its bytes and a terminating NUL (cmake -DIN=.. -DOUT=.. -DNAME=.. -P).
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}" "/* Generated from ${IN} by embed.cmake: do not edit. */\n#include \"report_template.h\"\nconst char ${NAME}[] = {\n${bytes}0x00 };\n")
