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
	header  map[string][]uint32 // masked
	footer  map[string][]uint32 // masked
	end     []uint32            // unmasked ids; trained for train roles
	sep     []uint32            // masked
	rOpen   []uint32
	rClose  []uint32
	train   map[string]bool
	added   []tokenizer.SpecialToken
	special map[string]uint32
}

// NewRenderer resolves the template's special tokens to ids (allocating new
// ids after the vocabulary for tokens it lacks, see Added) and pre-renders
// the fixed template pieces.
func NewRenderer(tok *tokenizer.Tokenizer, tmpl Template) (*Renderer, error) {
	if err := tmpl.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	r := &Renderer{tok: tok, tmpl: tmpl, header: map[string][]uint32{}, footer: map[string][]uint32{},
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
	enc := tok.NewEncoder()
	render := func(s string) []uint32 {
		var out []uint32
		for _, p := range splitSpecials(s, tmpl.SpecialTokens) {
			if p.special != "" {
				out = append(out, r.special[p.special])
			} else {
				out = enc.Encode(out, p.text)
			}
		}
		return out
	}
	for role, h := range tmpl.Header {
		r.header[role] = render(h)
	}
	for role, f := range tmpl.Footer {
		r.footer[role] = render(f)
	}
	r.end, r.sep = render(tmpl.MessageEnd), render(tmpl.Separator)
	r.rOpen, r.rClose = render(tmpl.ReasoningOpen), render(tmpl.ReasoningClose)
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

// RenderPacked appends the sample's tokens to dst in packed form (id, with
// trainedBit set on trained tokens). Each template piece and each message
// field is tokenised on its own, so token boundaries always coincide with
// loss-mask boundaries.
func (r *Renderer) RenderPacked(enc *tokenizer.Encoder, dst []uint32, t *Trajectory) ([]uint32, error) {
	if t.ID == "" {
		return dst, &RejectError{"empty_id", "trajectory has no id"}
	}
	if len(t.Messages) == 0 {
		return dst, &RejectError{"no_messages", "trajectory " + t.ID + " has no messages"}
	}
	start := len(dst)
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
		}
		dst = append(dst, h...)
		if m.Reasoning != "" {
			dst = appendMarked(dst, r.rOpen, bit)
			dst = r.encodeMarked(enc, dst, m.Reasoning, bit)
			dst = appendMarked(dst, r.rClose, bit)
		}
		dst = r.encodeMarked(enc, dst, m.Content, bit)
		dst = append(dst, r.footer[m.Role]...)
		dst = appendMarked(dst, r.end, bit)
		dst = append(dst, r.sep...)
		if bit != 0 {
			trained = true
		}
	}
	if !trained {
		return dst[:start], &RejectError{"no_trained_tokens", "trajectory " + t.ID + " has no message of a trained role"}
	}
	return dst, nil
}

func (r *Renderer) encodeMarked(enc *tokenizer.Encoder, dst []uint32, text string, bit uint32) []uint32 {
	n := len(dst)
	dst = enc.Encode(dst, text)
	if bit != 0 {
		for i := n; i < len(dst); i++ {
			dst[i] |= bit
		}
	}
	return dst
}

func appendMarked(dst, ids []uint32, bit uint32) []uint32 {
	n := len(dst)
	dst = append(dst, ids...)
	if bit != 0 {
		for i := n; i < len(dst); i++ {
			dst[i] |= bit
		}
	}
	return dst
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
