# man1.cmake - writes collsim(1) from the binary's own help texts, so the
# manual page says exactly what --help says: the front page's usage, then
# one section per subcommand the front page lists. Run by the build (cmake -P) after collsim is
# linked: cmake -DCOLLSIM=path/to/collsim -DOUT=collsim.1 -DVERSION=x.y.z
#   -P man1.cmake
# Help text -> roff: backslashes escaped, lines starting with . or ' guarded.
function(roff_block text out)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${COLLSIM} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "collsim --help failed: ${rc}")
endif()
roff_block("${top}" top_roff)
# The subcommands, as the front page lists them ("  NAME  summary").
string(REGEX MATCHALL "\n  [a-z]+ " rows "${top}")
set(subs "")
foreach(r ${rows})
  string(STRIP "${r}" r)
  if(NOT r STREQUAL "help")
    list(APPEND subs ${r})
  endif()
endforeach()
set(page ".TH COLLSIM 1 \"\" \"collsim ${VERSION}\" \"User Commands\"\n")
string(APPEND page ".SH NAME\ncollsim \\- simulate collectives on forked ranks over shared memory\n")
string(APPEND page ".SH SYNOPSIS\n.B collsim\n[\\fB\\-\\-help\\fR] [\\fB\\-\\-version\\fR] \\fISUBCOMMAND\\fR [\\fIOPTIONS\\fR]\n")
string(APPEND page ".SH DESCRIPTION\n${top_roff}")
foreach(s ${subs})
  execute_process(COMMAND ${COLLSIM} ${s} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "collsim ${s} --help failed: ${rc}")
  endif()
  roff_block("${help}" help_roff)
  string(TOUPPER "${s}" up)
  string(APPEND page ".SH COLLSIM ${up}\n${help_roff}")
endforeach()
string(APPEND page ".SH YOUR OWN COLLECTIVE\n`collsim run \\-\\-algo ./x.so` runs a collective built against the public C API (\\fBcollsim-api\\fR(3)); the examples directory of the source tree has two.\n")
string(APPEND page ".SH SEE ALSO\n\\fBcollsim-api\\fR(3), \\fBpkg-config\\fR(1)\n")
file(WRITE ${OUT} "${page}")
