package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-rdma/rdmacm/cm"
	"github.com/go-rdma/rdmacm/rdma"
)

// One cm.Channel per backend and process, shared by every endpoint and
// listener: the user backend's CM engine owns the CM class of each port,
// so a process that dials and listens must use one channel; and accepted
// endpoints share the listener's device context anyway. A dispatcher
// goroutine reads the channel and routes each event to its ID's mailbox.

type channel struct {
	key  rdma.Backend
	ch   *cm.Channel
	refs int // under channelsMu
	dead chan struct{}
	// gone is closed once the last release's Close has returned: the
	// dispatcher sees the channel closed (dead) before the user backend
	// has given its CM agents back.
	gone chan struct{}

	mu    sync.Mutex
	boxes map[*cm.ID]*mailbox
}

var (
	channelsMu sync.Mutex
	channels   = map[rdma.Backend]*channel{}
	// closing holds a backend's channel while its last release closes it:
	// the user backend's CM agent is the port's until then, so a new
	// channel waits for it.
	closing = map[rdma.Backend]*channel{}
)

func acquireChannel(b rdma.Backend) (*channel, error) {
	channelsMu.Lock()
	defer channelsMu.Unlock()
	for {
		if c := channels[b]; c != nil {
			c.refs++
			return c, nil
		}
		old := closing[b]
		if old == nil {
			break
		}
		select {
		case <-old.gone: // closed; its release has yet to forget it
			delete(closing, b)
			continue
		default:
		}
		channelsMu.Unlock()
		<-old.gone
		channelsMu.Lock()
	}
	ch, err := cm.Open(&cm.Options{Backend: b})
	if err != nil {
		return nil, err
	}
	c := &channel{key: b, ch: ch, refs: 1, dead: make(chan struct{}), gone: make(chan struct{}), boxes: map[*cm.ID]*mailbox{}}
	channels[b] = c
	go c.loop()
	return c, nil
}

// acquire takes one more reference of a channel already held.
func (c *channel) acquire() {
	channelsMu.Lock()
	c.refs++
	channelsMu.Unlock()
}

func (c *channel) release() {
	channelsMu.Lock()
	c.refs--
	last := c.refs == 0
	if last {
		delete(channels, c.key)
		closing[c.key] = c
	}
	channelsMu.Unlock()
	if last {
		c.ch.Close()
		<-c.dead
		close(c.gone)
		channelsMu.Lock()
		if closing[c.key] == c {
			delete(closing, c.key)
		}
		channelsMu.Unlock()
	}
}

func (c *channel) loop() {
	defer close(c.dead)
	for {
		ev, err := c.ch.GetEvent(context.Background())
		if err != nil {
			return
		}
		id := ev.ID
		if ev.Type == cm.EventConnectRequest {
			id = ev.Listener
		}
		c.mu.Lock()
		box := c.boxes[id]
		c.mu.Unlock()
		if box == nil {
			ev.Ack()
			if ev.Type == cm.EventConnectRequest {
				ev.ID.Reject(nil)
				ev.ID.Destroy()
			}
			continue
		}
		box.put(ev)
	}
}

// register gives id a mailbox.
func (c *channel) register(id *cm.ID) *mailbox {
	b := &mailbox{c: c, sig: make(chan struct{}, 1)}
	c.mu.Lock()
	c.boxes[id] = b
	c.mu.Unlock()
	return b
}

// unregister drops id's mailbox and acks what it still holds.
func (c *channel) unregister(id *cm.ID) {
	c.mu.Lock()
	b := c.boxes[id]
	delete(c.boxes, id)
	c.mu.Unlock()
	if b != nil {
		b.drain()
	}
}

// mailbox holds one ID's undelivered events.
type mailbox struct {
	c   *channel
	mu  sync.Mutex
	evs []*cm.Event
	sig chan struct{}
}

func (b *mailbox) put(ev *cm.Event) {
	b.mu.Lock()
	b.evs = append(b.evs, ev)
	b.mu.Unlock()
	select {
	case b.sig <- struct{}{}:
	default:
	}
}

func (b *mailbox) drain() {
	b.mu.Lock()
	evs := b.evs
	b.evs = nil
	b.mu.Unlock()
	for _, ev := range evs {
		ev.Ack()
		if ev.Type == cm.EventConnectRequest {
			ev.ID.Reject(nil)
			ev.ID.Destroy()
		}
	}
}

// get returns the next event; stop (closed by Close) ends the wait with
// ErrClosed.
func (b *mailbox) get(ctx context.Context, stop <-chan struct{}) (*cm.Event, error) {
	for {
		b.mu.Lock()
		if len(b.evs) > 0 {
			ev := b.evs[0]
			b.evs[0] = nil
			b.evs = b.evs[1:]
			b.mu.Unlock()
			return ev, nil
		}
		b.mu.Unlock()
		select {
		case <-b.sig:
		case <-ctx.Done():
			return nil, ctxErr(ctx)
		case <-stop:
			return nil, fmt.Errorf("rdmacm: %w", ErrClosed)
		case <-b.c.dead:
			return nil, fmt.Errorf("rdmacm: CM channel: %w", ErrClosed)
		}
	}
}

// ctxErr is ctx's error, matching ErrTimeout for a passed deadline.
func ctxErr(ctx context.Context) error {
	err := context.Cause(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("rdmacm: %w (%w)", ErrTimeout, err)
	}
	return err
}
