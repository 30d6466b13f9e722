"""Which files a terminal command writes or changes (webui.hermes.shell_edits), and every file
tool's changes (webui.hermes.file_changes): quoting, here-documents, command lists and pipes,
``cd`` then a relative path, subshells, ``bash -c``, and what is left out on purpose."""

from __future__ import annotations

import json

import pytest

from webui.hermes.file_changes import changes, unified_diff, v4a_changes
from webui.hermes.paths import inside, relative, resolve
from webui.hermes.shell_edits import FORMS, shell_edits
from webui.hermes.shell_lexer import simple_commands

CWD = "/home/u/p"


def edits(command: str, cwd: str | None = CWD) -> list[tuple]:
    return [(e.path, e.action, e.form) for e in shell_edits(command, cwd)]


# -- redirections ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, expected",
    [
        ("echo hi > a.txt", [("/home/u/p/a.txt", "write", ">")]),
        ("echo hi >a.txt", [("/home/u/p/a.txt", "write", ">")]),
        ("echo hi >> a.txt", [("/home/u/p/a.txt", "append", ">>")]),
        ("echo hi >| a.txt", [("/home/u/p/a.txt", "write", ">|")]),
        ("make &> build.log", [("/home/u/p/build.log", "write", "&>")]),
        ("make &>> build.log", [("/home/u/p/build.log", "append", "&>>")]),
        ("make >& build.log", [("/home/u/p/build.log", "write", "&>")]),
        ("make 2> err.log", [("/home/u/p/err.log", "write", "2>")]),
        ("make 1> out.log", [("/home/u/p/out.log", "write", ">")]),
        ("make 2>&1 > out.log", [("/home/u/p/out.log", "write", ">")]),
        ("make > /dev/null 2>&1", []),
        ("make >&2", []),
        ("cat < in.txt", []),
        ("echo a2>f", [("/home/u/p/f", "write", ">")]),  # "a2" is a word, not a descriptor
    ],
)
def test_redirections(command, expected):
    assert edits(command) == expected


def test_what_a_literal_producer_wrote():
    (e,) = shell_edits("echo 'two  spaces' > a", CWD)
    assert e.content == "two  spaces\n"
    (e,) = shell_edits("echo -n no newline > a", CWD)
    assert e.content == "no newline"
    (e,) = shell_edits('printf "a\\nb\\n" > a', CWD)
    assert e.content == "a\nb\n"
    (e,) = shell_edits("printf '%s\\n' one two > a", CWD)
    assert e.content == "one\ntwo\n"
    for unknown in ("echo $USER > a", 'echo "$(date)" > a', "printf '%d' 3 > a", "ls > a",
                    "echo -e 'a\\tb' > a", "cat file.txt > a"):  # fmt: skip
        (e,) = shell_edits(unknown, CWD)
        assert e.content is None, unknown


def test_only_the_last_stdout_redirection_gets_the_text():
    first, second = shell_edits("echo x > a > b", CWD)
    assert (first.path, first.content) == ("/home/u/p/a", None)
    assert (second.path, second.content) == ("/home/u/p/b", "x\n")


# -- here-documents ----------------------------------------------------------------------------


def test_a_here_document_is_text_not_commands():
    command = (
        "cat > /tmp/f.py <<'EOF'\nimport os\nrm -rf /\necho x > /etc/passwd\nEOF\necho done > d"
    )
    es = shell_edits(command, CWD)
    assert [(e.path, e.action) for e in es] == [("/tmp/f.py", "write"), ("/home/u/p/d", "write")]
    assert es[0].content == "import os\nrm -rf /\necho x > /etc/passwd\n"


def test_here_document_forms():
    (e,) = shell_edits('cat <<"END" > c.ini\nname=$USER\nEND', CWD)
    assert e.content == "name=$USER\n"  # quoted delimiter: no expansion, the text as written
    (e,) = shell_edits("cat <<END > c.ini\nname=$USER\nEND", CWD)
    assert e.content is None  # unquoted: $USER expands when it runs
    (e,) = shell_edits("cat >> notes.md <<- EOT\n\tline one\n\tEOT\n", CWD)
    assert (e.action, e.content) == ("append", "line one\n")  # <<- strips leading tabs
    (e,) = shell_edits("cat > x <<EOF\nno end marker", CWD)
    assert e.content == "no end marker\n"
    (e,) = shell_edits("tee t.txt <<'EOF' > /dev/null\nhello\nEOF", CWD)
    assert (e.path, e.content) == ("/home/u/p/t.txt", "hello\n")
    (e,) = shell_edits("cat <<< 'one line' > h", CWD)
    assert e.content == "one line\n"


def test_two_here_documents_on_one_line():
    es = shell_edits("cat > a <<A; cat > b <<B\nalpha\nA\nbeta\nB\n", CWD)
    assert [(e.path, e.content) for e in es] == [
        ("/home/u/p/a", "alpha\n"),
        ("/home/u/p/b", "beta\n"),
    ]


# -- lists, pipes and folders ---------------------------------------------------------------------


def test_lists_and_pipes():
    assert edits("make && echo ok > s; echo no >> s || true") == [
        ("/home/u/p/s", "write", ">"),
        ("/home/u/p/s", "append", ">>"),
    ]
    (e,) = shell_edits("echo hello | sudo tee -a /etc/hosts > /dev/null", CWD)
    assert (e.path, e.action, e.form, e.content) == ("/etc/hosts", "append", "tee -a", "hello\n")
    (e,) = shell_edits("curl -s http://x | tee page.html", CWD)
    assert (e.path, e.content) == ("/home/u/p/page.html", None)  # the pipe's text is unknown
    es = shell_edits("echo v1 | tee A | tee -a B", CWD)
    assert [(x.path, x.content) for x in es] == [("/home/u/p/A", "v1\n"), ("/home/u/p/B", None)]
    (e,) = shell_edits("echo x | cat > y", CWD)
    assert e.content == "x\n"
    (e,) = shell_edits("sleep 1 & echo bg > b", CWD)
    assert e.path == "/home/u/p/b"


def test_cd_then_a_relative_path():
    assert edits("cd /repo && echo x > a; cd sub; echo y > b") == [
        ("/repo/a", "write", ">"),
        ("/repo/sub/b", "write", ">"),
    ]
    assert edits("cd .. && echo x > a") == [("/home/u/a", "write", ">")]
    assert edits("cd && echo x > a") == [("~/a", "write", ">")]
    assert edits("pushd /w && echo x > a") == [("/w/a", "write", ">")]
    assert edits("echo x > a", cwd=None) == [("a", "write", ">")]  # folder unknown: as written


def test_an_unknown_folder_after_cd_leaves_paths_relative():
    assert edits("cd $DIR && echo x > a") == [("a", "write", ">")]
    assert edits("cd - && echo x > a") == [("a", "write", ">")]


def test_a_subshell_keeps_its_cd():
    assert edits("(cd sub && echo a > in.txt) && echo b > top.txt") == [
        ("/home/u/p/sub/in.txt", "write", ">"),
        ("/home/u/p/top.txt", "write", ">"),
    ]


def test_bash_c_is_read_as_a_command():
    assert edits("bash -lc \"cd /w && echo z > z.txt\"") == [("/w/z.txt", "write", ">")]
    assert edits("sh -c 'sed -i s/a/b/ f'") == [("/home/u/p/f", "edit", "sed -i")]
    assert edits("bash script.sh > out") == [("/home/u/p/out", "write", ">")]


def test_wrappers_and_assignments_are_looked_through():
    assert edits("FOO=1 env -i BAR=2 nohup sed -i s/a/b/ f") == [("/home/u/p/f", "edit", "sed -i")]
    assert edits("sudo -u www rm -rf /var/www/cache") == [("/var/www/cache", "delete", "rm")]
    assert edits("timeout -s KILL 30 sed -i s/a/b/ t") == [("/home/u/p/t", "edit", "sed -i")]
    assert edits("nice -n 5 cp a b") == [("/home/u/p/b", "copy_in", "cp")]
    assert edits("if true; then rm x; fi") == [("/home/u/p/x", "delete", "rm")]


def test_quoting():
    assert edits("echo x > 'my file.txt'") == [("/home/u/p/my file.txt", "write", ">")]
    assert edits('echo x > "my file.txt"') == [("/home/u/p/my file.txt", "write", ">")]
    assert edits("echo x > my\\ file.txt") == [("/home/u/p/my file.txt", "write", ">")]
    assert edits("rm \"a;b\" 'c&&d'") == [
        ("/home/u/p/a;b", "delete", "rm"),
        ("/home/u/p/c&&d", "delete", "rm"),
    ]
    assert edits("echo 'a # no comment' > c.txt # comment > nope.txt") == [
        ("/home/u/p/c.txt", "write", ">")
    ]
    assert edits("echo x \\\n  > cont.txt") == [("/home/u/p/cont.txt", "write", ">")]
    assert edits("echo $'tab\\there' > ansi") == [("/home/u/p/ansi", "write", ">")]


def test_what_is_left_out():
    assert edits('echo $HOME > h.txt; echo x > "$OUT"; echo y > ${F}; echo z > `name`') == [
        ("/home/u/p/h.txt", "write", ">")
    ]
    assert edits("rm -f *.pyc build/?.o [ab].txt") == []
    assert edits("for f in a b; do sed -i 's/a/b/' \"$f\"; done") == []
    assert edits("x=$(cd /tmp && echo y > inside)") == []  # substitutions are not read
    assert edits("diff <(sort a) <(sort b) > d.txt") == [("/home/u/p/d.txt", "write", ">")]
    assert edits("grep -c x f; ls -la; git status") == []
    assert edits("") == [] and edits("   ") == []
    assert shell_edits(None) == [] and shell_edits(42) == []  # type: ignore[arg-type]


# -- sed, tee, mv, cp, rm, git, downloads -----------------------------------------------------


@pytest.mark.parametrize(
    "command, files, script",
    [
        ("sed -i 's/a/b/' x.py", ["/home/u/p/x.py"], "s/a/b/"),
        (
            "sed -i.bak -e 's/x/y/' -e 's/1/2/' a b",
            ["/home/u/p/a", "/home/u/p/b"],
            "s/x/y/\ns/1/2/",
        ),
        ("sed --in-place=.orig 's/x/y/' a", ["/home/u/p/a"], "s/x/y/"),
        ("sed --in-place --expression='s/x/y/' a", ["/home/u/p/a"], "s/x/y/"),
        ("sed -i '' 's/x/y/' mac.txt", ["/home/u/p/mac.txt"], "s/x/y/"),  # BSD sed
        ("sed -Ei 's/x+/y/' a", ["/home/u/p/a"], "s/x+/y/"),
        ("sed -ie 's/x/y/' a", ["/home/u/p/a"], "s/x/y/"),  # GNU: suffix "e", script next
        ("gsed -i -f fix.sed a", ["/home/u/p/a"], "(script file fix.sed)"),
        ("sed -i -- 's/x/y/' -weird-name", ["/home/u/p/-weird-name"], "s/x/y/"),
    ],
)
def test_sed_in_place(command, files, script):
    es = shell_edits(command, CWD)
    assert [e.path for e in es] == files
    assert all(e.action == "edit" and e.form == "sed -i" and e.detail == script for e in es)


def test_sed_without_i_changes_nothing():
    assert edits("sed -n 's/x/y/p' f.txt") == [] and edits("sed 's/a/b/' f > g") == [
        ("/home/u/p/g", "write", ">")
    ]


def test_tee():
    assert edits("echo x | tee a b") == [
        ("/home/u/p/a", "write", "tee"),
        ("/home/u/p/b", "write", "tee"),
    ]
    assert edits("echo x | tee --append a") == [("/home/u/p/a", "append", "tee -a")]


def test_mv_cp_rm():
    es = shell_edits("mv old.py new.py", CWD)
    assert [(e.path, e.action, e.other) for e in es] == [
        ("/home/u/p/new.py", "move_in", "/home/u/p/old.py"),
        ("/home/u/p/old.py", "move_out", "/home/u/p/new.py"),
    ]
    assert edits("mv a.txt b.txt dest/") == [
        ("/home/u/p/dest/a.txt", "move_in", "mv"), ("/home/u/p/a.txt", "move_out", "mv"),
        ("/home/u/p/dest/b.txt", "move_in", "mv"), ("/home/u/p/b.txt", "move_out", "mv"),
    ]  # fmt: skip
    assert edits("mv -t /dst one") == [
        ("/dst/one", "move_in", "mv"),
        ("/home/u/p/one", "move_out", "mv"),
    ]
    assert edits("mv --target-directory=/dst one") == [
        ("/dst/one", "move_in", "mv"), ("/home/u/p/one", "move_out", "mv")
    ]  # fmt: skip
    assert edits("mv -f a b/") == [
        ("/home/u/p/b/a", "move_in", "mv"),
        ("/home/u/p/a", "move_out", "mv"),
    ]
    assert edits("cp -r src/ backup/") == [("/home/u/p/backup/src", "copy_in", "cp")]
    assert edits("cp -a a b") == [("/home/u/p/b", "copy_in", "cp")]
    assert edits("cp a") == [] and edits("mv $A b") == []
    assert edits("rm -rf build dist/") == [
        ("/home/u/p/build", "delete", "rm"),
        ("/home/u/p/dist", "delete", "rm"),
    ]
    assert edits("rm -- -f") == [("/home/u/p/-f", "delete", "rm")]


def test_git_mv_and_rm():
    assert edits("git -C /r mv x y") == [
        ("/r/y", "move_in", "git mv"),
        ("/r/x", "move_out", "git mv"),
    ]
    assert edits("git rm --cached z") == []
    assert edits("git rm -r old") == [("/home/u/p/old", "delete", "git rm")]
    assert edits("git -C /r status; rm after") == [("/home/u/p/after", "delete", "rm")]  # -C ends


def test_downloads():
    assert edits("curl -sSL https://x/y -o out.bin") == [("/home/u/p/out.bin", "write", "curl -o")]
    assert edits("curl --output=o2 https://x") == [("/home/u/p/o2", "write", "curl -o")]
    assert edits("curl -oo3 https://x") == [("/home/u/p/o3", "write", "curl -o")]
    assert edits("wget -O page.html https://x") == [("/home/u/p/page.html", "write", "wget -O")]
    assert edits("wget -O - https://x | tar xz") == []
    assert edits("curl -O https://x/remote-name") == []  # the name is the server's


def test_paths_are_normalised_and_devices_left_out():
    assert edits("echo x > ./a/../b//c") == [("/home/u/p/b/c", "write", ">")]
    assert edits("echo x > /dev/stderr; echo y > /proc/sys/vm/drop_caches") == []


def test_every_form_is_listed():
    listed = " ".join(f for f, _ in FORMS)
    for form in (">", ">>", "&>", "tee -a", "sed -i", "mv", "cp", "rm", "git mv", "git rm", "curl -o",
                 "wget -O", "cd", "bash -c"):  # fmt: skip
        assert form in listed


def test_the_lexer_survives_garbage():
    for text in ("'unclosed", '"unclosed $(', "$(((", "<<", "> ", "&&&&", ")(", "`", "a\\", "{ }"):
        simple_commands(text)
        shell_edits(text, CWD)


# -- the file tools ---------------------------------------------------------------------------------


def test_write_file():
    (c,) = changes("write_file", json.dumps({"path": "src/a.py", "content": "x = 1\n"}), "/r")
    assert (c.path, c.action, c.via, c.content, c.full) == (
        "/r/src/a.py",
        "write",
        "write_file",
        "x = 1\n",
        True,
    )
    (c,) = changes("write_file", {"path": "/abs/b", "content": 3}, "/r")
    assert c.content is None and not c.full
    assert changes("write_file", {"content": "x"}, "/r") == []
    assert (
        changes("write_file", "{not json", "/r") == [] and changes("write_file", "[1]", "/r") == []
    )
    assert changes("read_file", {"path": "a"}, "/r") == []


def test_patch_replace():
    (c,) = changes("patch", {"path": "a.py", "old_string": "T = 1", "new_string": "T = 2"}, "/r")
    assert (c.path, c.action, c.via) == ("/r/a.py", "edit", "patch")
    assert "-T = 1" in c.patch and "+T = 2" in c.patch
    (c,) = changes("patch", {"mode": "replace", "path": "a.py", "old_string": "a", "new_string": "b",
                             "replace_all": True}, "/r")  # fmt: skip
    assert c.patch.startswith("(every occurrence)")


V4A = """*** Begin Patch
*** Update File: src/app.py
@@ def main @@
 def main():
-    return 1
+    return 2
*** Add File: docs/new.md
+# New
+

+second line
*** Delete File: old.txt
*** Move File: a.sh -> bin/a.sh
*** End Patch
*** Update File: after/the/end.py
"""


def test_patch_v4a():
    found = changes("patch", {"mode": "patch", "patch": V4A}, "/r")
    assert [(c.path, c.action) for c in found] == [
        ("/r/src/app.py", "edit"),
        ("/r/docs/new.md", "write"),
        ("/r/old.txt", "delete"),
        ("/r/bin/a.sh", "move_in"),
        ("/r/a.sh", "move_out"),
    ]
    # Hermes joins the '+' lines by newlines; a line with nothing at all is dropped
    assert found[1].content == "# New\n\nsecond line"
    assert "-    return 1" in found[0].patch and found[0].via == "V4A patch"
    assert v4a_changes("no markers at all", "/r") == []


def test_terminal_calls():
    found = changes("terminal", {"command": "echo x > a", "workdir": "/w"}, "/r")
    assert [(c.path, c.via, c.content) for c in found] == [("/w/a", ">", "x\n")]
    found = changes("terminal", {"command": "echo x >> a; sed -i s/a/b/ a"}, "/r")
    assert [(c.action, c.patch) for c in found] == [("append", "x\n"), ("edit", "s/a/b/")]


def test_paths_helpers():
    assert resolve("/a/b", "../c") == "/a/c" and resolve(None, "x/./y") == "x/y"
    assert (
        resolve("/a", "~/x") == "~/x"
        and resolve("/a", "") is None
        and resolve("/a", "/dev/null") is None
    )
    assert relative("/r/src/a.py", "/r") == "src/a.py" and relative("/rx/a", "/r") == "/rx/a"
    assert (
        relative("/r", "/r") == "." and relative("a", "/r") == "a" and relative("/x", None) == "/x"
    )
    assert (
        inside("/r/a", "/r")
        and inside("/r", "/r")
        and not inside("/ra", "/r")
        and not inside("/r/a", None)
    )


def test_unified_diff():
    d = unified_diff("a\nb\n", "a\nc\n", "one", "two")
    assert d.splitlines()[:2] == ["--- one", "+++ two"] and "-b" in d and "+c" in d
    assert unified_diff("x", "x", "a", "b") == ""
    long = unified_diff("".join(f"{i}\n" for i in range(100)), "", "a", "b", max_lines=10)
    assert long.count("\n") == 11 and "goes on" in long
