package doctor

// The daemon's side, checked as the daemon's account: what the service
// user must be able to write, read and reach for reviews to happen. As
// root, doctor runs these checks in a copy of itself switched to that
// account (like the hook's dry run), so the kernel, not a guess from mode
// bits, says what the account can do.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aicr-dev/aicr/config"
	"github.com/aicr-dev/aicr/rundir"
	"github.com/aicr-dev/aicr/vcs"
	"github.com/aicr-dev/aicr/vcs/p4"
	"github.com/aicr-dev/aicr/vcs/svn"
)

// Check names of the daemon's side.
const (
	CheckDaemonAccount = "daemon-account" // the account the checks below ran as
	CheckDataDir       = "data-dir"       // data_dir owned and writable by the daemon's account
	CheckFile          = "file"           // a *_file the daemon reads is readable
	CheckRepoAccess    = "repo-access"    // the repository answers with the repo's credentials
)

// daemonSideTimeout bounds the whole daemon-side run: a VCS command per
// repo, each bounded by the repo's command_timeout, and version queries.
const daemonSideTimeout = 5 * time.Minute

// childPath is the PATH the daemon's checks run with: a service's, not
// the admin's shell's.
const childPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// daemonAccount is the account the daemon runs as: --as-user, else the
// owner of data_dir (the daemon refuses to run as anyone else), else the
// aicr service user the packages create, else doctor's own.
func daemonAccount(cfg *config.Config, asUser string) (account, string, error) {
	if asUser != "" {
		a, err := lookupUser(asUser)
		return a, "--as-user", err
	}
	if isDir(cfg.Daemon.DataDir) {
		return ownerOf(cfg.Daemon.DataDir), "it owns data_dir " + cfg.Daemon.DataDir, nil
	}
	if a, err := lookupUser("aicr"); err == nil {
		return a, "the aicr service user; data_dir does not exist yet", nil
	}
	return currentAccount(), "doctor's own: data_dir does not exist yet and there is no aicr user", nil
}

// checkDaemonSide runs the daemon's checks as its account: in process when
// doctor already is that account (or cannot switch), else through a copy
// of the aicr binary started as it.
func checkDaemonSide(ctx context.Context, opts Options) []Check {
	cfg := opts.Config
	acct := Check{Name: CheckDaemonAccount}
	who, why, err := daemonAccount(cfg, opts.AsUser)
	if err != nil {
		acct.Detail = fmt.Sprintf("--as-user %s: %v", opts.AsUser, err)
		acct.Fix = "name the account the daemon runs as (systemd: User= in aicr.service), e.g. --as-user aicr"
		return []Check{acct}
	}
	switch {
	case who.isCurrent():
		acct.Status, acct.Detail = StatusOK, fmt.Sprintf("checked as %s, the daemon's account (%s)", who.who(), why)
		return append([]Check{acct}, DaemonSide(ctx, cfg, opts.Repo)...)
	case !who.switching():
		acct.Status = StatusWarn
		acct.Detail = fmt.Sprintf("checked as uid %d, not as the daemon's account %s (%s): what that account can read and write may differ", os.Geteuid(), who.who(), why)
		acct.Fix = "run aicr doctor as root to check as the daemon's account"
		return append([]Check{acct}, DaemonSide(ctx, cfg, opts.Repo)...)
	}
	found, err := runDaemonSideAs(ctx, opts, who)
	if err != nil {
		acct.Detail = fmt.Sprintf("could not run %s doctor as %s, the daemon's account (%s): %v", opts.Exe, who.who(), why, err)
		acct.Fix = fmt.Sprintf("install aicr where %s can run it (e.g. /usr/local/bin/aicr, mode 0755), then run aicr doctor again", who.user)
		return []Check{acct}
	}
	acct.Status, acct.Detail = StatusOK, fmt.Sprintf("checked as %s, the daemon's account (%s), with a service's environment", who.who(), why)
	return append([]Check{acct}, found...)
}

// runDaemonSideAs runs `aicr doctor --daemon-side RESULT` as who, with
// the environment a service gets plus the variables the config names for
// secrets (which a unit passes through Environment=/EnvironmentFile=).
func runDaemonSideAs(ctx context.Context, opts Options, who account) ([]Check, error) {
	if opts.Exe == "" {
		return nil, errors.New("no aicr binary to run")
	}
	dir, err := resultDir(who)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	result := filepath.Join(dir, "result.json")
	cctx, cancel := context.WithTimeout(ctx, daemonSideTimeout)
	defer cancel()
	args := []string{"doctor", "--config", opts.Config.Path, "--daemon-side", result}
	if opts.Repo != "" {
		args = append(args, "--repo", opts.Repo)
	}
	cmd := exec.CommandContext(cctx, opts.Exe, args...)
	cmd.Env = []string{"PATH=" + childPath, "HOME=" + who.home(), "LANG=C.UTF-8", "USER=" + who.user, "LOGNAME=" + who.user}
	_, envNames := daemonFiles(opts.Config, opts.Repo)
	for _, name := range envNames {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	cmd.Dir = "/"
	who.runAs(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, oneLine(string(out)))
	}
	return readResult(result)
}

// RunDaemonSide is `aicr doctor --daemon-side RESULT`: the daemon's checks
// made as the account this process runs as, handed back through result.
// A config this account cannot load is itself the finding.
func RunDaemonSide(ctx context.Context, configPath, only, result string) error {
	var checks []Check
	cfg, err := config.Load(configPath)
	if err != nil {
		me := currentAccount()
		c := Check{Name: CheckConfig, Status: StatusFail, Detail: fmt.Sprintf("the daemon's account %s cannot load %s: %s", me.who(), configPath, oneLine(err.Error()))}
		if errors.Is(err, os.ErrPermission) {
			c.Fix = grantReadFix(configPath, me)
		} else {
			c.Fix = "aicr config check " + shellQuote(configPath)
		}
		checks = []Check{c}
	} else {
		checks = DaemonSide(ctx, cfg, only)
	}
	return WriteResult(result, checks)
}

// DaemonSide is every check of the daemon's side, made as this process's
// account.
func DaemonSide(ctx context.Context, cfg *config.Config, only string) []Check {
	me := currentAccount()
	out := []Check{checkDataDir(cfg, me)}
	out = append(out, checkDaemonFiles(cfg, only, me)...)
	if !isDir(cfg.Daemon.DataDir) {
		// The adapters keep per-repo state under data_dir (svn's
		// config dir); doctor must not create data_dir as the wrong
		// account, so they get a throwaway one.
		if tmp, err := os.MkdirTemp("", "aicr-doctor-state-"); err == nil {
			defer os.RemoveAll(tmp)
			for _, r := range cfg.Repos {
				if sd, ok := r.Settings.(vcs.StateDirUser); ok {
					sd.SetStateDir(filepath.Join(tmp, r.Name))
				}
			}
		}
	}
	for _, r := range cfg.Repos {
		if only == "" || r.Name == only {
			out = append(out, checkRepoAccess(ctx, r))
		}
	}
	return append(out, checkTools(ctx, cfg, only, "")...)
}

// checkDaemonFiles checks every *_file the daemon reads.
func checkDaemonFiles(cfg *config.Config, only string, me account) []Check {
	files, _ := daemonFiles(cfg, only)
	var out []Check
	for _, f := range files {
		c := checkFileReadable(f, me)
		if pc := p4RepoOf(cfg, f); pc != nil && strings.HasSuffix(f.Key, " ticket_file") && !isFile(f.Path) {
			// Only p4 login writes a tickets file; one made by hand
			// holds no ticket.
			c.Fix = p4TicketFix(pc, me.user)
		}
		out = append(out, c)
	}
	return out
}

// checkDataDir proves data_dir is the daemon's: owned by it (the daemon
// refuses to start otherwise) and writable (a probe file created and
// removed), and so are aicr.db and runs/ when they exist.
func checkDataDir(cfg *config.Config, me account) Check {
	dir := cfg.Daemon.DataDir
	c := Check{Name: CheckDataDir}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Mkdir(dir, 0o750); err != nil {
			c.Detail = fmt.Sprintf("data_dir %s does not exist and %s cannot create it: %s", dir, me.who(), oneLine(err.Error()))
			c.Fix = fmt.Sprintf("install -d -o %s -g %s -m 0750 %s", me.user, me.group, shellQuote(dir))
			return c
		}
		os.Remove(dir)
		c.Status, c.Detail = StatusOK, fmt.Sprintf("data_dir %s does not exist yet; %s can create it", dir, me.who())
		return c
	case errors.Is(err, syscall.ENOTDIR):
		// A file where a directory of the path should be: no access
		// right cures that, only another data_dir does.
		c.Detail = fmt.Sprintf("data_dir %s cannot be a directory: a part of its path is a file (%s)", dir, oneLine(err.Error()))
		c.Fix = "point [daemon] data_dir at a directory of its own, e.g. /var/lib/aicr"
		return c
	case err != nil:
		c.Detail = fmt.Sprintf("data_dir %s: %s", dir, oneLine(err.Error()))
		c.Fix = grantSearchFix(dir, me)
		return c
	case !st.IsDir():
		c.Detail = fmt.Sprintf("data_dir %s is not a directory", dir)
		c.Fix = "point [daemon] data_dir at a directory of its own, e.g. /var/lib/aicr"
		return c
	}
	if owner := ownerOf(dir); owner.known && me.known && owner.uid != me.uid {
		c.Detail = fmt.Sprintf("data_dir %s belongs to %s, so the daemon refuses to start as %s", dir, owner.who(), me.who())
		c.Fix = fmt.Sprintf("chown %s %s (only the directory itself; the spool inside keeps its owner and group)", me.user, shellQuote(dir))
		return c
	}
	var bad []string
	if err := probeWrite(dir); err != nil {
		bad = append(bad, fmt.Sprintf("%s: %s", dir, oneLine(err.Error())))
	}
	if db := config.DBPath(cfg); isFile(db) {
		if f, err := os.OpenFile(db, os.O_RDWR, 0); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %s", db, oneLine(err.Error())))
		} else {
			f.Close()
		}
	}
	if runs := rundir.RunsDir(dir); isDir(runs) {
		if err := probeWrite(runs); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %s", runs, oneLine(err.Error())))
		}
	}
	if len(bad) > 0 {
		c.Detail = fmt.Sprintf("%s cannot write where the daemon must: %s", me.who(), strings.Join(bad, "; "))
		c.Fix = fmt.Sprintf("chmod u+rwX %s, and chown %s each path named (not the spool dir, which the hook writes)", shellQuote(dir), me.user)
		return c
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("data_dir %s is %s's and writable (created and removed a probe file)", dir, me.user)
	return c
}

func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".aicr-doctor-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// checkFileReadable reads the first byte of a file the daemon reads.
func checkFileReadable(nf namedFile, me account) Check {
	c := Check{Name: CheckFile, Repo: nf.Repo}
	f, err := os.Open(nf.Path)
	if err == nil {
		_, err = f.Read(make([]byte, 1))
		f.Close()
		if errors.Is(err, io.EOF) {
			c.Detail = fmt.Sprintf("%s %s is empty", nf.Key, nf.Path)
			c.Fix = "write the value into " + nf.Path
			return c
		}
	}
	switch {
	case err == nil:
		c.Status, c.Detail = StatusOK, fmt.Sprintf("%s %s is readable by %s", nf.Key, nf.Path, me.who())
	case errors.Is(err, os.ErrNotExist):
		c.Detail = fmt.Sprintf("%s %s does not exist", nf.Key, nf.Path)
		c.Fix = fmt.Sprintf("create it readable by %s: install -m 0640 -g %s VALUE_FILE %s", me.user, me.group, shellQuote(nf.Path))
	case errors.Is(err, os.ErrPermission):
		c.Detail = fmt.Sprintf("%s %s is not readable by %s, the daemon's account", nf.Key, nf.Path, me.who())
		c.Fix = grantReadFix(nf.Path, me)
	default:
		c.Detail = fmt.Sprintf("%s %s: %s", nf.Key, nf.Path, oneLine(err.Error()))
		if st, serr := os.Stat(nf.Path); serr == nil && !st.Mode().IsRegular() {
			// The daemon reads only regular files (secret.ErrNotRegular).
			c.Fix = fmt.Sprintf("point %s at a regular file holding the value: %s is not a file", nf.Key, nf.Path)
		}
	}
	return c
}

// grantReadFix gives me read access to path without taking any from
// anyone: an ACL entry for me, or membership of the group that already
// reads it. Never chown or chgrp: the file may be the hook's too.
func grantReadFix(path string, me account) string {
	fix := grantSearchFix(filepath.Dir(path), me)
	if fix != "" {
		fix += "; then "
	}
	alt := ""
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o040 != 0 {
		if g := groupOf(st); g != "" {
			alt = fmt.Sprintf(", or add %s to group %s, which reads it already: usermod -aG %s %s, then restart the daemon", me.user, g, g, me.user)
		}
	}
	return fix + fmt.Sprintf("setfacl -m u:%s:r %s (adds %s's read access, leaves everyone else's as it is)%s", me.user, shellQuote(path), me.user, alt)
}

// grantSearchFix lets me through every directory above path that it
// cannot search; "" when it can reach path.
func grantSearchFix(dir string, me account) string {
	var dirs []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && !me.can(st, permExec) {
			dirs = append([]string{shellQuote(d)}, dirs...)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	if len(dirs) == 0 {
		return ""
	}
	return fmt.Sprintf("let %s through %s: setfacl -m u:%s:x %s", me.user, strings.Join(dirs, ", "), me.user, strings.Join(dirs, " "))
}

// loginStatuser and depotChecker are the p4 adapter's doctor queries.
type loginStatuser interface {
	LoginStatus(ctx context.Context) (string, error)
	InvisibleDepotPaths(ctx context.Context) ([]string, error)
}

// checkRepoAccess asks the repository what the daemon asks first, with
// the repo's own credentials and client settings: svn info at HEAD (or
// svnlook youngest on the server), p4 login -s and the depot paths.
func checkRepoAccess(ctx context.Context, r config.Repo) Check {
	c := Check{Name: CheckRepoAccess, Repo: r.Name}
	a, err := r.Settings.NewAdapter()
	if err != nil {
		c.Detail = oneLine(err.Error())
		switch {
		case errors.Is(err, vcs.ErrToolMissing):
			c.Fix = "install the client or set its path in the [[repo]] (svn_path, p4_path)"
		case errors.Is(err, os.ErrPermission):
			c.Fix = "the daemon's account cannot create its files under data_dir: see the data-dir check"
		default:
			c.Fix = "fix the [[repo]] as the error says, then run aicr doctor again"
		}
		return c
	}
	if ls, ok := a.(loginStatuser); ok {
		return checkP4Access(ctx, r, ls, c)
	}
	lister, ok := a.(vcs.Lister)
	if !ok {
		c.Status, c.Detail = StatusWarn, fmt.Sprintf("repo kind %s has no head query to check access with", r.Kind)
		return c
	}
	head, err := lister.Head(ctx)
	if err != nil {
		c.Detail = oneLine(err.Error())
		c.Fix = svnAccessFix(r, err)
		return c
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("the repository answers: head revision %s%s", head, credentialNote(r))
	return c
}

// svnAccessFix reads svn's error code to name the cure.
func svnAccessFix(r config.Repo, err error) string {
	msg := err.Error()
	url, user, pwFile := svnSettings(r)
	switch {
	case strings.Contains(msg, "E170001") || strings.Contains(msg, "E215004") || strings.Contains(msg, "E170013") && strings.Contains(msg, "uthenticat"):
		if user == "" {
			return fmt.Sprintf("the server wants credentials: set username and password_file in [[repo]] %s", r.Name)
		}
		src := "password_env"
		if pwFile != "" {
			src = pwFile
		}
		return fmt.Sprintf("the server refuses user %s with the password from %s: write the right password into it in place (printf '%%s' 'PASSWORD' > %s keeps its owner and mode), then check by hand as the daemon's account: svn info --non-interactive --username %s --password-from-stdin %s < %s",
			user, src, shellQuote(pwFile), shellQuote(user), shellQuote(url), shellQuote(pwFile))
	// A repository that is not there comes before an unreachable server:
	// svn wraps a missing file:// repository (E180001) in the same
	// "Unable to connect" (E170013) as a server that does not answer.
	case strings.Contains(msg, "E170000") || strings.Contains(msg, "E160013") || strings.Contains(msg, "E160006") || strings.Contains(msg, "E180001"):
		return fmt.Sprintf("%s does not exist: fix url (or local_path/repo_path) in [[repo]] %s", url, r.Name)
	case errors.Is(err, vcs.ErrUnavailable):
		return fmt.Sprintf("the server at %s does not answer from this host: check it runs and that the firewall lets the daemon's host through", url)
	case strings.Contains(msg, "E230001"):
		return fmt.Sprintf("the server's certificate is not trusted: install its CA on this host, or set trust_server_cert_failures in [[repo]] %s", r.Name)
	case errors.Is(err, os.ErrPermission) || strings.Contains(msg, "ermission denied"):
		return "see the file check above: the daemon's account must read the password file and the repository"
	}
	return fmt.Sprintf("run what the daemon runs by hand, as its account: svn info --non-interactive %s", shellQuote(url))
}

func checkP4Access(ctx context.Context, r config.Repo, a loginStatuser, c Check) Check {
	pc, _ := r.Settings.(*p4.Config)
	port, user := "", ""
	if pc != nil {
		port, user = pc.Port, pc.User
	}
	status, err := a.LoginStatus(ctx)
	switch {
	case errors.Is(err, vcs.ErrUnavailable):
		c.Detail = oneLine(err.Error())
		c.Fix = fmt.Sprintf("the server %s does not answer from this host: check P4PORT (port in [[repo]] %s), that p4d runs and that the firewall lets the daemon's host through", port, r.Name)
		return c
	case errors.Is(err, p4.ErrAuth):
		c.Detail = oneLine(err.Error())
		c.Fix = p4LoginFix(pc, user, port, currentAccount().user)
		return c
	case err != nil:
		c.Detail = oneLine(err.Error())
		c.Fix = fmt.Sprintf("run what the daemon runs by hand, as its account: p4 -p %s -u %s login -s", shellQuote(port), shellQuote(user))
		return c
	}
	hidden, err := a.InvisibleDepotPaths(ctx)
	switch {
	case err != nil:
		c.Detail = fmt.Sprintf("%s; but listing the depot paths failed: %s", status, oneLine(err.Error()))
		c.Fix = fmt.Sprintf("run by hand, as the daemon's account: p4 -p %s -u %s files -m1 DEPOT_PATH", shellQuote(port), shellQuote(user))
		return c
	case len(hidden) > 0:
		c.Detail = fmt.Sprintf("%s; but user %s sees no file in %s: its changes cannot be read", status, user, strings.Join(hidden, ", "))
		c.Fix = fmt.Sprintf("fix depot_paths in [[repo]] %s, or grant user %s read access there in the protections table (p4 protect)", r.Name, user)
		return c
	}
	c.Status, c.Detail = StatusOK, fmt.Sprintf("p4 login -s: %s; every depot path shows files", status)
	return c
}

// p4LoginFix names the login that cures an expired or missing ticket,
// with the tickets file the daemon reads.
func p4LoginFix(pc *p4.Config, user, port, daemonUser string) string {
	if pc != nil && pc.PasswordFile != "" {
		return fmt.Sprintf("the password in %s is not accepted for user %s: write the right one into it in place (printf '%%s' 'PASSWORD' > %s keeps its owner and mode)", pc.PasswordFile, user, shellQuote(pc.PasswordFile))
	}
	tickets := "~/.p4tickets of the daemon's account"
	if pc != nil && pc.TicketFile != "" {
		tickets = pc.TicketFile
	}
	return fmt.Sprintf("log the service user in again, as the daemon's account, into %s: %s (or set password_file in the [[repo]] so the ticket is not needed)",
		tickets, p4LoginCommand(pc, user, port, daemonUser))
}

// p4TicketFix cures a ticket_file that does not exist: p4 login writes
// it, run as the daemon's account with P4TICKETS naming it.
func p4TicketFix(pc *p4.Config, daemonUser string) string {
	fix := fmt.Sprintf("p4 login writes the tickets file: log the service user in as the daemon's account with P4TICKETS set: %s",
		p4LoginCommand(pc, pc.User, pc.Port, daemonUser))
	if pc.PasswordFile != "" || pc.PasswordEnv != "" {
		fix += "; or start the daemon: with the repo's password it logs in by itself and writes the file"
	}
	return fix
}

// p4LoginCommand is `p4 login -a` as daemonUser with the daemon's
// tickets file. runuser comes with util-linux everywhere (Debian has no
// sudo by default); sudo is named for hosts that use it.
func p4LoginCommand(pc *p4.Config, user, port, daemonUser string) string {
	env := ""
	if pc != nil && pc.TicketFile != "" {
		env = "P4TICKETS=" + shellQuote(pc.TicketFile) + " "
	}
	login := fmt.Sprintf("env %sp4 -p %s -u %s login -a", env, shellQuote(port), shellQuote(user))
	return fmt.Sprintf("runuser -u %s -- %s (as root; or sudo -u %s %s)", daemonUser, login, daemonUser, login)
}

// p4RepoOf is the p4 settings of the repo f belongs to, if it is one.
func p4RepoOf(cfg *config.Config, f namedFile) *p4.Config {
	for _, r := range cfg.Repos {
		if r.Name == f.Repo {
			pc, _ := r.Settings.(*p4.Config)
			return pc
		}
	}
	return nil
}

func credentialNote(r config.Repo) string {
	if _, user, _ := svnSettings(r); user != "" {
		return fmt.Sprintf(" (as user %s, with the repo's password)", user)
	}
	return ""
}

// svnSettings are the svn repo's url, user and password file, for fixes.
func svnSettings(r config.Repo) (url, user, pwFile string) {
	sc, ok := r.Settings.(*svn.Config)
	if !ok {
		return "", "", ""
	}
	url = sc.URL
	if url == "" && sc.LocalPath != "" {
		url = "file://" + filepath.ToSlash(sc.LocalPath)
	}
	return url, sc.Username, sc.PasswordFile
}
