package triggers

// The flags of `notify svn` and `notify p4` are defined once, here, and
// registered from this table by both clients: cobra in `aicr notify`, the
// small parser of aicr-notify (which must not link cobra). A flag added
// here reaches both binaries with the same name and help, so a hook or
// trigger line that one accepts the other accepts too.

// ConfigFlagUsage is the help of --config, which every aicr command and
// both hook clients take.
const ConfigFlagUsage = "config file (default $" + ConfigPathEnv + ", else " + DefaultConfigPath + ")"

// FlagSet is what the notify flags are registered with. The standard
// library's *flag.FlagSet and cobra's *pflag.FlagSet both have these two
// methods, with the same signatures.
type FlagSet interface {
	StringVar(p *string, name, value, usage string)
	BoolVar(p *bool, name string, value bool, usage string)
}

// notifyFlag is one row of a notify command's flag table: a flag's name,
// its help, and the option it sets (a string, or for a switch a bool).
type notifyFlag[O any] struct {
	name   string
	usage  string
	str    func(*O) *string
	toggle func(*O) *bool
}

var svnNotifyFlags = []notifyFlag[SVNNotify]{
	{name: "repo", usage: "repo name from the config (default: the [[repo]] whose local_path or file:// url is REPOS_PATH)",
		str: func(o *SVNNotify) *string { return &o.Repo }},
}

// p4NotifyFlags carry what p4d expands in the trigger line (%change% etc.).
var p4NotifyFlags = []notifyFlag[P4Notify]{
	{name: "repo", usage: "repo name from the config (required)", str: func(o *P4Notify) *string { return &o.Repo }},
	{name: "change", usage: "the submitted changelist (%change%)", str: func(o *P4Notify) *string { return &o.Change }},
	{name: "user", usage: "the submitting user (%user%)", str: func(o *P4Notify) *string { return &o.User }},
	{name: "client", usage: "the submitting workspace (%client%)", str: func(o *P4Notify) *string { return &o.Client }},
	{name: "serverport", usage: "the server's P4PORT (%serverport%)", str: func(o *P4Notify) *string { return &o.ServerPort }},
	{name: "serverid", usage: "the server's ServerID (%serverid%)", str: func(o *P4Notify) *string { return &o.ServerID }},
	{name: "foreground", usage: "send in this process instead of a detached one (for testing)",
		toggle: func(o *P4Notify) *bool { return &o.Foreground }},
	{name: "shelve", usage: "the change was shelved, not submitted (the shelve-commit trigger)",
		toggle: func(o *P4Notify) *bool { return &o.Shelve }},
}

// RegisterFlags registers the flags of `notify svn` (all but --config,
// which each binary binds itself) on fs, bound to o.
func (o *SVNNotify) RegisterFlags(fs FlagSet) { registerNotifyFlags(fs, o, svnNotifyFlags) }

// RegisterFlags registers the flags of `notify p4` (all but --config) on
// fs, bound to o.
func (o *P4Notify) RegisterFlags(fs FlagSet) { registerNotifyFlags(fs, o, p4NotifyFlags) }

func registerNotifyFlags[O any](fs FlagSet, o *O, table []notifyFlag[O]) {
	for _, f := range table {
		if f.toggle != nil {
			fs.BoolVar(f.toggle(o), f.name, false, f.usage)
			continue
		}
		fs.StringVar(f.str(o), f.name, "", f.usage)
	}
}
