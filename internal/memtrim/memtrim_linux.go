package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// mapping is one region of /proc/self/smaps.
type mapping struct {
	start, end  uintptr
	perms, path string
	rss, anon   int64 // bytes
}

// dropExecutablePages advises the kernel that the executable's read-only
// mappings are not needed. Only mappings without anonymous pages
// qualify: a page the process changed (a relocation under RELRO, say) is
// a private copy that would come back from the file unchanged, so such a
// mapping is left alone. (Private_Dirty is no guide: a binary just
// written still has dirty page-cache pages the process never changed.) Replacing the file in place cannot feed different bytes back in:
// Linux refuses to open a running executable for writing (ETXTBSY), and
// package managers rename a new binary over the old one.
func dropExecutablePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("find the executable: %w", err)
	}
	maps, err := readSmaps("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	var dropped int64
	for _, m := range droppable(maps, exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, m.start, m.end-m.start, syscall.MADV_DONTNEED); errno != 0 {
			return dropped, fmt.Errorf("madvise %s %x-%x: %w", m.path, m.start, m.end, errno)
		}
		dropped += m.rss
	}
	return dropped, nil
}

// droppable picks the executable's mappings whose pages all come back
// from the file unchanged.
func droppable(maps []mapping, exe string) []mapping {
	var out []mapping
	for _, m := range maps {
		if m.path != exe || strings.Contains(m.perms, "w") || m.anon != 0 || m.rss == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

func readSmaps(path string) ([]mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fields[0], "-"); ok && len(fields) >= 5 {
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				m := mapping{start: uintptr(start), end: uintptr(end), perms: fields[1]}
				if len(fields) >= 6 {
					m.path = strings.Join(fields[5:], " ")
				}
				out = append(out, m)
				continue
			}
		}
		if len(out) == 0 || len(fields) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		switch fields[0] {
		case "Rss:":
			out[len(out)-1].rss = kb * 1024
		case "Anonymous:":
			out[len(out)-1].anon = kb * 1024
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
