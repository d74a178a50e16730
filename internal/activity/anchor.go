package activity

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/switchboardhq/switchboard"
)

// Files an Anchor keeps in the data root, beside the SQLite database.
const (
	AnchorFile    = "ledger.anchor"
	AnchorKeyFile = "ledger.key"
	// DefaultAnchorInterval is how often a running anchor writes (and
	// fsyncs) its newest checkpoint when entries were appended.
	DefaultAnchorInterval = time.Second
)

// bootIDFile names the running kernel's boot (Linux); a checkpoint taken
// under another boot tells that the machine restarted since.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// AnchorOptions configures an Anchor. A nil *AnchorOptions means defaults.
type AnchorOptions struct {
	// Durability is the store's setting ("" when unknown): it says whether
	// a crash may roll back entries a checkpoint names.
	Durability switchboard.Durability
	// Interval is how often Start writes the newest checkpoint.
	Interval time.Duration
	Logger   *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Anchor is the ledger's head checkpoint kept outside the ledger table:
// the newest entry this process appended, HMAC-signed with a key in the
// data root, written to AnchorFile and fsynced every Interval. The hash
// chain alone cannot tell a ledger whose last entries were deleted from
// one that never had them; the anchor can (docs/governance.md "Anchoring
// the chain"). An Anchor opened without a directory keeps its checkpoint
// and a per-process key in memory only. Safe for concurrent use.
type Anchor struct {
	dir        string
	key        []byte
	durability string
	boot       string
	interval   time.Duration
	log        *slog.Logger
	now        func() time.Time

	mu    sync.Mutex
	found *switchboard.LedgerCheckpoint // AnchorFile as read at open
	head  switchboard.LedgerCheckpoint  // newest, unsigned, without Chains
	// chains are the heads of the chains this process appended to, when
	// an entry off chain 1's own numbering was among them (multi): the
	// checkpoint then names each.
	chains map[int]switchboard.ChainHead
	multi  bool
	dirty  bool
	stop   chan struct{}
	done   chan struct{}
}

// OpenAnchor opens the anchor kept in dir, creating its key (mode 0600)
// on first use; dir "" keeps everything in memory.
func OpenAnchor(dir string, opts *AnchorOptions) (*Anchor, error) {
	var o AnchorOptions
	if opts != nil {
		o = *opts
	}
	if o.Interval <= 0 {
		o.Interval = DefaultAnchorInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Anchor{dir: dir, durability: string(o.Durability), boot: bootID(), interval: o.Interval, log: o.Logger, now: o.Now}
	if dir == "" {
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key) // never fails on supported platforms
		return a, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open ledger anchor: %w", err)
	}
	var err error
	if a.key, err = loadOrCreateKey(filepath.Join(dir, AnchorKeyFile)); err != nil {
		return nil, fmt.Errorf("open ledger anchor: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, AnchorFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("open ledger anchor: %w", err)
	default:
		var cp switchboard.LedgerCheckpoint
		if err := json.Unmarshal(b, &cp); err != nil {
			// Kept as an unsigned checkpoint: reconcile records it as forged
			// rather than the daemon refusing to start.
			cp = switchboard.LedgerCheckpoint{Seq: -1}
		}
		a.found = &cp
	}
	return a, nil
}

// loadOrCreateKey reads the hex key at path or creates a random one; two
// processes creating it at once agree on the first (O_EXCL).
func loadOrCreateKey(path string) ([]byte, error) {
	for range 2 {
		b, err := os.ReadFile(path)
		if err == nil {
			k, err := hex.DecodeString(strings.TrimSpace(string(b)))
			if err != nil || len(k) < 32 {
				return nil, fmt.Errorf("%s is not a 256-bit hex key; remove it to make a new one (checkpoints signed with it stop verifying)", path)
			}
			return k, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		_, werr := f.WriteString(hex.EncodeToString(k) + "\n")
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return nil, err
		}
		return k, nil
	}
	return nil, fmt.Errorf("create %s: it keeps appearing and vanishing", path)
}

func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Sign returns cp with its MAC set.
func (a *Anchor) Sign(cp switchboard.LedgerCheckpoint) switchboard.LedgerCheckpoint {
	cp.MAC = a.mac(cp)
	return cp
}

// Valid reports whether cp carries this anchor's signature.
func (a *Anchor) Valid(cp switchboard.LedgerCheckpoint) bool {
	want, err := hex.DecodeString(cp.MAC)
	return err == nil && hmac.Equal(want, mustHex(a.mac(cp)))
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// mac signs every field but MAC, each on its own line.
func (a *Anchor) mac(cp switchboard.LedgerCheckpoint) string {
	m := hmac.New(sha256.New, a.key)
	fields := []string{"switchboard ledger checkpoint v1", strconv.FormatInt(cp.Seq, 10), cp.Hash,
		strconv.FormatInt(cp.Ts.UTC().UnixMicro(), 10), cp.Durability, cp.Boot}
	if cp.Clean { // only when set, so checkpoints signed before the field existed still verify
		fields = append(fields, "clean")
	}
	for _, c := range cp.Chains { // likewise
		fields = append(fields, "chain "+strconv.Itoa(c.Chain)+" "+strconv.FormatInt(c.Seq, 10)+" "+strconv.FormatInt(c.ID, 10)+" "+c.Hash)
	}
	for _, f := range fields {
		m.Write([]byte(strconv.Itoa(len(f)) + ":" + f + "\n"))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// checkpoint returns a signed checkpoint of entry seq with hash and, on a
// ledger of several chains, of every chain's head.
func (a *Anchor) checkpoint(seq int64, hash string, chains []switchboard.ChainHead) switchboard.LedgerCheckpoint {
	cp := a.unsigned(seq, hash)
	cp.Chains = chains
	return a.Sign(cp)
}

// unsigned is checkpoint without the MAC and chains: the head is signed
// when read, not on every append.
func (a *Anchor) unsigned(seq int64, hash string) switchboard.LedgerCheckpoint {
	return switchboard.LedgerCheckpoint{Seq: seq, Hash: hash, Ts: a.now().UTC().Truncate(time.Microsecond),
		Durability: a.durability, Boot: a.boot}
}

// current is the newest checkpoint, unsigned, with the chains' heads when
// there are several chains. Called with mu held.
func (a *Anchor) current() switchboard.LedgerCheckpoint {
	cp := a.head
	if a.multi {
		cp.Chains = make([]switchboard.ChainHead, 0, len(a.chains))
		for _, c := range a.chains {
			cp.Chains = append(cp.Chains, c)
		}
		slices.SortFunc(cp.Chains, func(x, y switchboard.ChainHead) int { return x.Chain - y.Chain })
	}
	return cp
}

// Head returns the newest checkpoint, signed; ok is false before any entry.
func (a *Anchor) Head() (cp switchboard.LedgerCheckpoint, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.head.Seq == 0 {
		return cp, false
	}
	return a.Sign(a.current()), true
}

// Found returns the checkpoint AnchorFile held when the anchor was opened.
func (a *Anchor) Found() (cp switchboard.LedgerCheckpoint, ok bool) {
	if a.found == nil {
		return cp, false
	}
	return *a.found, true
}

// advance moves the head to e unless it is there already, and e's
// chain's head likewise: entries appended concurrently may arrive out of
// order.
func (a *Anchor) advance(e switchboard.ActivityEntry) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.advanceLocked(e)
}

func (a *Anchor) advanceLocked(e switchboard.ActivityEntry) {
	chain, seq := e.Position()
	if a.chains == nil {
		a.chains = map[int]switchboard.ChainHead{}
	}
	if c, ok := a.chains[chain]; !ok || seq > c.Seq {
		a.chains[chain] = switchboard.ChainHead{Chain: chain, Seq: seq, ID: e.ID, Hash: e.Hash}
		a.multi = a.multi || e.Chain != 0
		a.dirty = true
	}
	if e.ID > a.head.Seq {
		a.head = a.unsigned(e.ID, e.Hash)
		a.dirty = true
	}
}

// reset puts the head at head, the store's newest entry at start (zero:
// none), even backwards, and keeps vouching for the chain heads in keep
// (the checkpoint found, when the store still holds it).
func (a *Anchor) reset(head switchboard.ActivityEntry, keep []switchboard.ChainHead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.head, a.chains, a.multi = a.unsigned(0, ""), nil, false
	for _, c := range keep {
		a.advanceLocked(entryAt(c))
	}
	if head.ID != 0 {
		a.advanceLocked(head)
	}
	a.dirty = true
}

// entryAt is the entry a chain head names, as far as an anchor needs it.
func entryAt(c switchboard.ChainHead) switchboard.ActivityEntry {
	e := switchboard.ActivityEntry{ID: c.ID, Hash: c.Hash, Chain: c.Chain, Seq: c.Seq}
	if c.Chain == 1 && c.Seq == c.ID {
		e.Chain, e.Seq = 0, 0
	}
	return e
}

// Flush writes the head checkpoint to AnchorFile and fsyncs it when it
// moved since the last write. The file is replaced atomically (a rename),
// so a crash leaves the old checkpoint or the new one.
func (a *Anchor) Flush() error {
	a.mu.Lock()
	if !a.dirty || a.dir == "" || a.head.Seq == 0 {
		a.mu.Unlock()
		return nil
	}
	cp := a.Sign(a.current())
	a.dirty = false
	a.mu.Unlock()
	if err := a.write(cp); err != nil {
		a.mu.Lock()
		a.dirty = true
		a.mu.Unlock()
		return fmt.Errorf("write ledger anchor: %w", err)
	}
	return nil
}

func (a *Anchor) write(cp switchboard.LedgerCheckpoint) error {
	b, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	tmp := filepath.Join(a.dir, AnchorFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(append(b, '\n'))
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(a.dir, AnchorFile)); err != nil {
		return err
	}
	d, err := os.Open(a.dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Start writes the checkpoint every Interval until Close.
func (a *Anchor) Start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop != nil || a.dir == "" {
		return
	}
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(a.interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := a.Flush(); err != nil {
					a.log.Error("the ledger's checkpoint was not saved", "err", err)
				}
			}
		}
	}(a.stop, a.done)
}

// Close stops Start's writer and writes the newest checkpoint, marked
// clean: a store shorter than it at the next start, on the same boot, was
// not rolled back by a crash.
func (a *Anchor) Close() error {
	a.mu.Lock()
	stop, done := a.stop, a.done
	a.stop = nil
	a.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	a.mu.Lock()
	if a.head.Seq != 0 && !a.head.Clean {
		a.head.Clean, a.dirty = true, true
	}
	a.mu.Unlock()
	return a.Flush()
}
