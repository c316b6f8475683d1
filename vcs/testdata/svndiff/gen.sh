#!/bin/sh
# Regenerates the svn diff captures in this directory from a throwaway
# repository, using the real svn client:
#   sh vcs/testdata/svndiff/gen.sh
# Captured with svn 1.14.2. diff_test.go pins what the parser makes of them.
set -eu
out=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8
svnadmin create "$tmp/repo"
R="file://$tmp/repo"
svn mkdir -q -m init "$R/trunk"
svn checkout -q "$R/trunk" "$tmp/wc"
cd "$tmp/wc"
ci() { svn commit -q -m "$1"; svn update -q; }
cap() { svn diff -c "$(svn info --show-item revision "$R")" "$R/trunk" >"$out/$1.patch"; }

printf 'a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n' >a.txt
mkdir '中文 目录'
printf 'hello\nworld' >'中文 目录/文件@2x.txt'
: >empty.txt
svn add -q a.txt empty.txt '中文 目录'
ci add
cap add

printf 'a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\n' >a.txt
ci modify
cap modify

svn rm -q '中文 目录/文件@2x.txt@'
ci delete
cap delete

printf 'x\000y\n' >nul.dat
printf 'looks like text\n' >img.png
svn add -q nul.dat img.png
# svn warns that img.png looks like text; that is the point.
svn propset -q svn:mime-type application/octet-stream img.png 2>/dev/null
ci binary
cap binary

svn propset -q svn:eol-style native a.txt
svn propset -q svn:ignore '*.o' .
ci props
cap propsonly

svn propset -q svn:keywords Id a.txt
svn propdel -q svn:eol-style a.txt
echo l >>a.txt
ci 'props and content'
cap propsandcontent

svn copy -q a.txt c.txt
echo more >>c.txt
ci copy
cap copy

printf 'no-nl' >nn.txt
svn add -q nn.txt
ci nn
printf 'no-nl\nmore' >nn.txt
ci 'nn more'
cap nonewline

printf 'select 1;\n-- old comment\nselect 2;\n' >q.sql
svn add -q q.sql
ci sql
printf 'select 1;\n++ counter\nIndex: fake\n===================================================================\nProperty changes on: fake\n## -0,0 +1 ##\n@@ -1 +1 @@\nselect 2;\n' >q.sql
ci tricky
cap tricky

svn rm -q c.txt
printf 'new\n' >c.txt
svn add -q c.txt
ci replace
cap replace
