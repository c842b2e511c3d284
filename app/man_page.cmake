# Writes neardup(1) from the program's own help: `neardup --help` (the
# overview and the command list) and `neardup help COMMAND` for each command,
# so the man page says what --help says. Run at build time by app/CMakeLists.txt:
#   cmake -DNEARDUP=path/to/neardup -DOUT=neardup.1 -DVERSION=0.2.0 -P app/man_page.cmake
foreach(var NEARDUP OUT VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "man_page.cmake: set -D${var}=...")
  endif()
endforeach()

function(run_help out_var)
  execute_process(COMMAND ${NEARDUP} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE status
                  ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "man_page.cmake: neardup ${ARGN} exited ${status}: ${err}")
  endif()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# roff: a backslash is \e; a line starting with '.' or "'" would be a request.
function(to_roff out_var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

run_help(overview --help)
# The commands: the lines of the "commands:" block, "  NAME    summary".
string(REGEX MATCH "\ncommands:\n([^\n]+\n)+" block "${overview}")
string(REGEX MATCHALL "\n  [a-z][^\n]*" lines "${block}")
set(commands)
foreach(line IN LISTS lines)
  string(REGEX REPLACE "^\n  ([a-z][a-z ]*[a-z])  +.*$" "\\1" name "${line}")
  list(APPEND commands "${name}")
endforeach()
list(LENGTH commands count)
if(count LESS 5)
  message(FATAL_ERROR "man_page.cmake: found ${count} commands in `neardup --help`")
endif()

string(TIMESTAMP date "%Y-%m-%d" UTC)  # (SOURCE_DATE_EPOCH, when set, for reproducible builds)
to_roff(overview_roff "${overview}")
set(page ".TH NEARDUP 1 \"${date}\" \"neardup ${VERSION}\" \"User Commands\"
.SH NAME
neardup \\- streaming near-duplicate filter for Apache Kafka
.SH SYNOPSIS
.B neardup
.I command
[\\fIoptions\\fR]
.br
.B neardup help
.I command
.SH DESCRIPTION
.nf
${overview_roff}.fi
.SH COMMANDS
")
foreach(name IN LISTS commands)
  string(REPLACE " " ";" words "${name}")
  run_help(help help ${words})
  to_roff(help_roff "${help}")
  string(APPEND page ".SS neardup ${name}\n.nf\n${help_roff}.fi\n")
endforeach()
string(APPEND page ".SH SEE ALSO
The documentation installed with neardup (README.md, docs/, config/README.md),
and \\fBneardup config keys\\fR for every configuration key.
")
file(WRITE "${OUT}" "${page}")
