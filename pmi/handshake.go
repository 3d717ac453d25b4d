package pmi

import (
	"context"
	"fmt"
	"strconv"
)

// handshake runs the opening exchanges of cl.version on cl.c and starts
// its reader. id is PMI_ID when the connection was made to PMI_PORT, else
// -1.
func (cl *Client) handshake(ctx context.Context, env func(string) (string, bool), id int) error {
	sync := func(req message, v2 bool, want string) (message, error) {
		cl.logf("send", req)
		ans, err := cl.c.exchangeSync(ctx, req, v2)
		if err != nil {
			return message{}, fmt.Errorf("pmi: %s: %w", req.cmd, err)
		}
		cl.logf("received", ans)
		if ans.cmd != want {
			return message{}, protoErr("the launcher answered %v to %s (want %s)", ans, req.cmd, want)
		}
		if err := ans.rc(req.cmd); err != nil {
			return message{}, err
		}
		return ans, nil
	}
	if id >= 0 {
		// PMI_PORT: the connection opens with initack, answered by
		// initack and then set size, set rank and set debug.
		if _, err := sync(message{"initack", []attr{{"pmiid", strconv.Itoa(id)}}}, false, "initack"); err != nil {
			return err
		}
		for range 3 {
			set, err := sync(message{}, false, "set")
			if err != nil {
				return err
			}
			for _, a := range set.attrs {
				n, err := strconv.Atoi(a.value)
				switch a.key {
				case "size":
					cl.size = n
				case "rank":
					cl.rank = n
				default:
					continue
				}
				if err != nil {
					return protoErr("set %s=%q is not an integer", a.key, a.value)
				}
			}
		}
	} else {
		for _, v := range []struct {
			key string
			dst *int
		}{{"PMI_RANK", &cl.rank}, {"PMI_SIZE", &cl.size}} {
			n, ok, err := envInt(env, v.key)
			if err != nil {
				return err
			}
			if ok {
				*v.dst = n
			} else if cl.version == 1 {
				return fmt.Errorf("pmi: PMI_FD is set but not %s", v.key)
			}
		}
	}
	ver := strconv.Itoa(cl.version)
	sub := "1"
	if cl.version == 2 {
		sub = "0"
	}
	init, err := sync(message{"init", []attr{{"pmi_version", ver}, {"pmi_subversion", sub}}}, false, "response_to_init")
	if err != nil {
		return err
	}
	if v, ok := init.get("pmi_version"); ok && v != ver {
		return fmt.Errorf("pmi: asked for PMI-%s, the launcher speaks PMI-%s", ver, v)
	}
	if cl.version == 1 {
		err = cl.initV1(sync)
	} else {
		err = cl.initV2(ctx, env, sync)
	}
	if err != nil {
		return err
	}
	if cl.size < 1 || cl.rank < 0 || cl.rank >= cl.size {
		return protoErr("rank %d of %d", cl.rank, cl.size)
	}
	if cl.universe < cl.size {
		cl.universe = cl.size
	}
	return nil
}

type syncFunc func(req message, v2 bool, want string) (message, error)

func (cl *Client) initV1(sync syncFunc) error {
	maxes, err := sync(message{"get_maxes", nil}, false, "maxes")
	if err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{"keylen_max", &cl.maxKey}, {"vallen_max", &cl.maxValue}} {
		if *f.dst, err = maxes.int(f.key); err != nil {
			return err
		}
		if *f.dst < 1 {
			return protoErr("maxes %s=%d", f.key, *f.dst)
		}
	}
	kvs, err := sync(message{"get_my_kvsname", nil}, false, "my_kvsname")
	if err != nil {
		return err
	}
	var ok bool
	if cl.jobID, ok = kvs.get("kvsname"); !ok || cl.jobID == "" {
		return protoErr("my_kvsname without kvsname")
	}
	app, err := sync(message{"get_appnum", nil}, false, "appnum")
	if err != nil {
		return err
	}
	if cl.appnum, err = app.int("appnum"); err != nil {
		return err
	}
	uni, err := sync(message{"get_universe_size", nil}, false, "universe_size")
	if err != nil {
		return err
	}
	if cl.universe, err = uni.int("size"); err != nil {
		return err
	}
	cl.c.start(false)
	return nil
}

// PMI-2 does not report its limits; these are the ones of PMI-2's API
// (PMI2_MAX_KEYLEN, PMI2_MAX_VALLEN), which launchers size their buffers
// for.
const (
	v2MaxKey   = 64
	v2MaxValue = 1024
)

func (cl *Client) initV2(ctx context.Context, env func(string) (string, bool), sync syncFunc) error {
	// The rank comes from PMI_RANK, or from initack's set rank when the
	// connection was made to PMI_PORT (Hydra wants pmirank either way).
	if cl.rank < 0 {
		return fmt.Errorf("pmi: PMI_FD is set but not PMI_RANK")
	}
	full := message{"fullinit", nil}
	// Slurm names the job in PMI_JOBID and wants it back.
	if jobid, ok := env("PMI_JOBID"); ok {
		if err := checkToken("PMI_JOBID", jobid); err != nil {
			return err
		}
		full.attrs = append(full.attrs, attr{"pmijobid", jobid})
	}
	full.attrs = append(full.attrs, attr{"pmirank", strconv.Itoa(cl.rank)}, attr{"threaded", "FALSE"})
	ans, err := sync(full, true, "fullinit-response")
	if err != nil {
		return err
	}
	envRank, envSize := cl.rank, cl.size
	if cl.rank, err = ans.int("rank"); err != nil {
		return err
	}
	if cl.size, err = ans.int("size"); err != nil {
		return err
	}
	if (envRank >= 0 && envRank != cl.rank) || (envSize >= 0 && envSize != cl.size) {
		return protoErr("fullinit-response says rank %d of %d, the environment %d of %d", cl.rank, cl.size, envRank, envSize)
	}
	if _, ok := ans.get("appnum"); ok {
		if cl.appnum, err = ans.int("appnum"); err != nil {
			return err
		}
	}
	cl.maxKey, cl.maxValue = v2MaxKey, v2MaxValue
	cl.c.start(true)
	job, err := cl.call(ctx, message{"job-getid", nil}, "job-getid-response")
	if err == nil {
		err = job.rc("job-getid")
	}
	if err != nil {
		return err
	}
	var ok bool
	if cl.jobID, ok = job.get("jobid"); !ok || cl.jobID == "" {
		return protoErr("job-getid-response without jobid")
	}
	uni, err := cl.call(ctx, message{"info-getjobattr", []attr{{"key", "universeSize"}}}, "info-getjobattr-response")
	if err != nil {
		return err
	}
	if f, _ := uni.get("found"); (f == "TRUE" || f == "true") && uni.rc("info-getjobattr") == nil {
		if cl.universe, err = uni.int("value"); err != nil {
			return err
		}
	}
	return nil
}
