package p4emu

// CaptureDepot serves the data behind the real -G captures in
// ../shared/fixtures/p4/marshal (rcowham/go-libp4's test server), so the
// tests can check that the emulator reproduces them byte for byte.
func CaptureDepot() *Depot {
	d := &Depot{Info: []string{
		"userName", "rcowham",
		"clientName", "rcowham-dvcs-1557689468",
		"clientRoot", "/Users/rcowham/go/src/github.com/rcowham/go-libp4/cmd",
		"clientLock", "none",
		"clientStream", "//stream/main",
		"clientCwd", "/Users/rcowham/go/src/github.com/rcowham/go-libp4/cmd",
		"clientCase", "insensitive",
		"peerAddress", "unknown",
		"clientAddress", "unknown",
		"serverName", "rcowham-dvcs-1557689468",
		"monitor", "enabled",
		"serverAddress", "unknown",
		"serverRoot", "/Users/rcowham/go/src/github.com/rcowham/go-libp4/cmd/.p4root",
		"serverDate", "2019/05/14 11:20:06 +0100 BST",
		"tzoffset", "3600",
		"serverUptime", "00:00:00",
		"serverVersion", "P4D/MACOSX1010X86_64/2019.1/1796703 (2019/04/30)",
		"ServerID", "rcowham-dvcs-1557689468",
		"serverServices", "local",
		"serverLicense", "none",
		"caseHandling", "sensitive",
		"allowPush", "1",
		"allowFetch", "3",
		"allowRewrite", "1",
		"unloadSupport", "disabled",
	}}
	d.Submit(&Change{Num: 1, Time: 1557689606, User: "rcowham", Client: "rcowham-dvcs-1557689468", Desc: "new",
		Files: []*File{{Path: "//stream/main/file1", Action: "add", Type: "text", Content: []byte("1\n")}}})
	d.Submit(&Change{Num: 2, Time: 1557746038, User: "rcowham", Client: "rcowham-dvcs-1557689468", Desc: "second",
		Files: []*File{{Path: "//stream/main/p4cmdf/file2", Action: "add", Type: "text", Content: []byte("2\n")}}})
	d.Submit(&Change{Num: 3, Time: 1557835718, User: "rcowham", Client: "rcowham-dvcs-1557689468",
		Desc: "Multi line change description\nSecond line\nThird line\n",
		Files: []*File{
			{Path: "//stream/main/p4cmd/file3", Action: "add", Type: "text", Content: []byte("3\n")},
			{Path: "//stream/main/p4cmdf/file4", Action: "add", Type: "text", Content: []byte("4\n")},
		}})
	return d
}
