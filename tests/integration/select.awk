# select.awk: a suite made ready for running some of its tests alone (run SUITE BOUNDARY NAME...).
#
# A test is its `TEST "name"` line and the lines after it up to the first blank line, the next TEST
# at its own depth or above, or the end of the block that holds it (a line indented less than the
# TEST line, or a `;;`). That is how every suite is written: what follows a test's blank line (a
# helper, setup for later tests, the next TEST) belongs to no test and always runs. This script
# turns each test into
#     if TEST "name"; then
#     BODY
#     fi
# (TEST returns 1 for a test not asked for) and keeps every line where it was, so bash's messages
# name the suite's own line numbers: a blank line that ends a body becomes `fi`; a line that ends
# one otherwise starts with `fi; `. Text inside quotes or a here-document is never taken for a
# TEST line or for the end of a body. A TEST inside another test's body could never be run alone
# (the outer test's body is skipped): that is an error, naming both lines.
function indent(s) { match(s, /^[ \t]*/); return RLENGTH }
# Scan `s` from the quoting state `q` ("" code, "'" or "\"" inside a string) and return the state
# at its end; sets heredoc to the delimiter of a here-document that starts on this line.
function scan(s, q,    i, c, n) {
    n = length(s)
    for (i = 1; i <= n; i++) {
        c = substr(s, i, 1)
        if (q == "'") { if (c == "'") q = ""; continue }
        if (q == "\"") {
            if (c == "\\") { i++; continue }
            if (c == "\"") q = ""
            continue
        }
        if (c == "\\") { i++; continue }
        if (c == "#" && (i == 1 || substr(s, i - 1, 1) ~ /[ \t;(]/)) break
        if (c == "'" || c == "\"") { q = c; continue }
        if (c == "<" && substr(s, i, 3) != "<<<" && match(substr(s, i), /^<<-?[ \t]*['"]?[A-Za-z_][A-Za-z_0-9]*/)) {
            heredoc = substr(s, i, RLENGTH)
            heredoc_strip = heredoc ~ /^<<-/
            sub(/^<<-?[ \t]*['"]?/, "", heredoc)
            i += RLENGTH - 1
        }
    }
    return q
}
function close_body(prefix) {
    intest = 0
    return (body_commands ? "" : ":; ") prefix
}
BEGIN { q = ""; heredoc = ""; intest = 0 }
{
    line = $0
    if (in_heredoc != "") {
        if ((heredoc_strip ? line ~ "^\t*" in_heredoc "$" : line == in_heredoc)) in_heredoc = ""
        print line
        next
    }
    at_code = (q == "")
    ind = indent(line)
    text = substr(line, ind + 1)
    out = line
    if (at_code) {
        is_test = (text ~ /^TEST[ \t]/)
        if (intest) {
            if (text == "") {
                out = sprintf("%" tind "s", "") close_body("fi")
            } else if (is_test && ind <= tind) {
                out = substr(line, 1, ind) close_body("fi; ") text
            } else if ((text !~ /^#/ && ind < tind) || (ind <= tind && text ~ /^;;/)) {
                out = substr(line, 1, ind) close_body(text ~ /^;;/ ? "fi " : "fi; ") text
            }
        }
        if (is_test && !intest) {
            intest = 1
            tind = ind
            test_line = FNR
            body_commands = 0
            out = out "; then"
            sub(/TEST[ \t]/, "if &", out)
        } else if (is_test) {
            printf "%s:%d: a TEST inside the test of line %d: end that test with a blank line first\n", \
                FILENAME, FNR, test_line > "/dev/stderr"
            failed = 1
            exit 1
        } else if (intest && text != "" && text !~ /^#/) {
            body_commands++
        }
    }
    heredoc = ""
    q = scan(line, q)
    if (heredoc != "") in_heredoc = heredoc
    print out
}
END { if (!failed && intest) print close_body("fi") }
