package pack

import (
	"fmt"

	"github.com/crucible-data/crucible/ops/pack/tokenizer"
)

// Message is one turn of a trajectory.
type Message struct {
	Role      string `json:"role" arrow:"role"`
	Content   string `json:"content" arrow:"content"`
	Reasoning string `json:"reasoning,omitempty" arrow:"reasoning"`
}

// Trajectory is one SFT sample: a task prompt followed by rounds of
// assistant reasoning + answer and environment feedback. Domain and family
// are optional labels used to report what a length cap removes.
type Trajectory struct {
	ID       string    `json:"id" arrow:"id"`
	Domain   string    `json:"domain,omitempty" arrow:"domain"`
	Family   string    `json:"family,omitempty" arrow:"family"`
	Messages []Message `json:"messages" arrow:"messages"`
}

// trainedBit marks a trained token in the packed uint32 form used between
// rendering and writing (ids stay below 2^31): one word per token keeps a
// 540M-token corpus at ~2 GiB in memory.
const trainedBit = 1 << 31

// Renderer turns trajectories into token ids and a loss mask.
type Renderer struct {
	tok     *tokenizer.Tokenizer
	tmpl    Template
	header  map[string][]templatePiece // masked
	footer  map[string][]templatePiece // masked
	end     []templatePiece            // trained for train roles
	sep     []templatePiece            // masked
	rOpen   []templatePiece
	rClose  []templatePiece
	train   map[string]bool
	added   []tokenizer.SpecialToken
	special map[string]uint32
}

// NewRenderer resolves the template's special tokens to ids (allocating new
// ids after the vocabulary for tokens it lacks, see Added) and splits the
// fixed template strings at their special tokens.
func NewRenderer(tok *tokenizer.Tokenizer, tmpl Template) (*Renderer, error) {
	if err := tmpl.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	r := &Renderer{tok: tok, tmpl: tmpl, header: map[string][]templatePiece{}, footer: map[string][]templatePiece{},
		train: map[string]bool{}, special: map[string]uint32{}}
	for _, s := range tmpl.SpecialTokens {
		id, fresh := tok.AddSpecial(s)
		r.special[s] = id
		if fresh {
			r.added = append(r.added, tokenizer.SpecialToken{Text: s, ID: id})
		}
	}
	for _, role := range tmpl.TrainRoles {
		r.train[role] = true
	}
	split := func(s string) []templatePiece { return splitSpecials(s, tmpl.SpecialTokens) }
	for role, h := range tmpl.Header {
		r.header[role] = split(h)
	}
	for role, f := range tmpl.Footer {
		r.footer[role] = split(f)
	}
	r.end, r.sep = split(tmpl.MessageEnd), split(tmpl.Separator)
	r.rOpen, r.rClose = split(tmpl.ReasoningOpen), split(tmpl.ReasoningClose)
	return r, nil
}

// Added lists the template tokens that got new ids because the vocabulary
// lacks them; a training job must size its embeddings for them.
func (r *Renderer) Added() []tokenizer.SpecialToken { return r.added }

// Tokenizer returns the renderer's tokeniser.
func (r *Renderer) Tokenizer() *tokenizer.Tokenizer { return r.tok }

// RejectError says why a trajectory cannot be rendered (a rejection, not a
// failure of the run).
type RejectError struct {
	Reason string // closed set: empty_id, no_messages, unknown_role, no_trained_tokens
	Detail string
}

func (e *RejectError) Error() string { return e.Reason + ": " + e.Detail }

// emitter accumulates rendered text and tokenises it in maximal runs: text
// between two special tokens with one loss-mask value is tokenised as a
// whole, exactly as a tokenizer given the whole rendered string would (so
// "register." + "\n" becomes the single token ".\n", not two). Runs are cut
// only at special tokens and where the mask changes, so no token ever
// straddles a mask boundary.
type emitter struct {
	enc     *tokenizer.Encoder
	r       *Renderer
	dst     []uint32
	pending []byte
	bit     uint32
}

func (e *emitter) flush() {
	if len(e.pending) == 0 {
		return
	}
	n := len(e.dst)
	e.dst = e.enc.Encode(e.dst, string(e.pending))
	if e.bit != 0 {
		for i := n; i < len(e.dst); i++ {
			e.dst[i] |= e.bit
		}
	}
	e.pending = e.pending[:0]
}

func (e *emitter) text(s string, bit uint32) {
	if s == "" {
		return
	}
	if bit != e.bit {
		e.flush()
		e.bit = bit
	}
	e.pending = append(e.pending, s...)
}

func (e *emitter) pieces(ps []templatePiece, bit uint32) {
	for _, p := range ps {
		if p.special == "" {
			e.text(p.text, bit)
			continue
		}
		e.flush()
		e.dst = append(e.dst, e.r.special[p.special]|bit)
	}
}

// RenderPacked appends the sample's tokens to dst in packed form (id, with
// trainedBit set on trained tokens).
func (r *Renderer) RenderPacked(enc *tokenizer.Encoder, dst []uint32, t *Trajectory) ([]uint32, error) {
	if t.ID == "" {
		return dst, &RejectError{"empty_id", "trajectory has no id"}
	}
	if len(t.Messages) == 0 {
		return dst, &RejectError{"no_messages", "trajectory " + t.ID + " has no messages"}
	}
	start := len(dst)
	e := emitter{enc: enc, r: r, dst: dst}
	trained := false
	for i := range t.Messages {
		m := &t.Messages[i]
		h, ok := r.header[m.Role]
		if !ok {
			return dst[:start], &RejectError{"unknown_role", fmt.Sprintf("trajectory %s message %d: role %q (known: system, user, assistant, environment)", t.ID, i, m.Role)}
		}
		var bit uint32
		if r.train[m.Role] {
			bit = trainedBit
			trained = true
		}
		e.pieces(h, 0)
		if m.Reasoning != "" {
			e.pieces(r.rOpen, bit)
			e.text(m.Reasoning, bit)
			e.pieces(r.rClose, bit)
		}
		e.text(m.Content, bit)
		e.pieces(r.footer[m.Role], 0)
		e.pieces(r.end, bit)
		e.pieces(r.sep, 0)
	}
	e.flush()
	if !trained {
		return e.dst[:start], &RejectError{"no_trained_tokens", "trajectory " + t.ID + " has no message of a trained role"}
	}
	return e.dst, nil
}

// Render returns the sample's ids and loss mask (1 = trained) separately.
func (r *Renderer) Render(t *Trajectory) (ids []int32, mask []int8, err error) {
	enc := r.tok.NewEncoder()
	packed, err := r.RenderPacked(enc, nil, t)
	if err != nil {
		return nil, nil, err
	}
	ids, mask = unpackTokens(packed)
	return ids, mask, nil
}

func unpackTokens(p []uint32) ([]int32, []int8) {
	ids := make([]int32, len(p))
	mask := make([]int8, len(p))
	for i, v := range p {
		ids[i] = int32(v &^ trainedBit)
		if v&trainedBit != 0 {
			mask[i] = 1
		}
	}
	return ids, mask
}
