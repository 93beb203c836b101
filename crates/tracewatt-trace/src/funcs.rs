//! The MPI function vocabulary: stable ids shared by every reader, the native format and the
//! C tracer (`tracer/funcs.h` is generated from this list; a test checks they agree).
//! Ids 0..290 follow SST-DUMPI's function labels so a DUMPI label is its id; later entries are
//! append-only. Never reorder: the ids are part of the native format.

/// Index into [`FUNC_NAMES`].
pub type Func = u16;

/// Lower-case MPI names without the `MPI_` prefix, indexed by [`Func`].
#[rustfmt::skip]
pub static FUNC_NAMES: &[&str] = &[
    "send", "recv", "get_count", "bsend", "ssend", "rsend", "buffer_attach", "buffer_detach",
    "isend", "ibsend", "issend", "irsend", "irecv", "wait", "test", "request_free",
    "waitany", "testany", "waitall", "testall", "waitsome", "testsome", "iprobe", "probe",
    "cancel", "test_cancelled", "send_init", "bsend_init", "ssend_init", "rsend_init", "recv_init", "start",
    "startall", "sendrecv", "sendrecv_replace", "type_contiguous", "type_vector", "type_hvector", "type_indexed", "type_hindexed",
    "type_struct", "address", "type_extent", "type_size", "type_lb", "type_ub", "type_commit", "type_free",
    "get_elements", "pack", "unpack", "pack_size", "barrier", "bcast", "gather", "gatherv",
    "scatter", "scatterv", "allgather", "allgatherv", "alltoall", "alltoallv", "reduce", "op_create",
    "op_free", "allreduce", "reduce_scatter", "scan", "group_size", "group_rank", "group_translate_ranks", "group_compare",
    "comm_group", "group_union", "group_intersection", "group_difference", "group_incl", "group_excl", "group_range_incl", "group_range_excl",
    "group_free", "comm_size", "comm_rank", "comm_compare", "comm_dup", "comm_create", "comm_split", "comm_free",
    "comm_test_inter", "comm_remote_size", "comm_remote_group", "intercomm_create", "intercomm_merge", "keyval_create", "keyval_free", "attr_put",
    "attr_get", "attr_delete", "topo_test", "cart_create", "dims_create", "graph_create", "graphdims_get", "graph_get",
    "cartdim_get", "cart_get", "cart_rank", "cart_coords", "graph_neighbors_count", "graph_neighbors", "cart_shift", "cart_sub",
    "cart_map", "graph_map", "get_processor_name", "get_version", "errhandler_create", "errhandler_set", "errhandler_get", "errhandler_free",
    "error_string", "error_class", "wtime", "wtick", "init", "finalize", "initialized", "abort",
    "pcontrol", "close_port", "comm_accept", "comm_connect", "comm_disconnect", "comm_get_parent", "comm_join", "comm_spawn",
    "comm_spawn_multiple", "lookup_name", "open_port", "publish_name", "unpublish_name", "accumulate", "get", "put",
    "win_complete", "win_create", "win_fence", "win_free", "win_get_group", "win_lock", "win_post", "win_start",
    "win_test", "win_unlock", "win_wait", "alltoallw", "exscan", "add_error_class", "add_error_code", "add_error_string",
    "comm_call_errhandler", "comm_create_keyval", "comm_delete_attr", "comm_free_keyval", "comm_get_attr", "comm_get_name", "comm_set_attr", "comm_set_name",
    "file_call_errhandler", "grequest_complete", "grequest_start", "init_thread", "is_thread_main", "query_thread", "status_set_cancelled", "status_set_elements",
    "type_create_keyval", "type_delete_attr", "type_dup", "type_free_keyval", "type_get_attr", "type_get_contents", "type_get_envelope", "type_get_name",
    "type_set_attr", "type_set_name", "type_match_size", "win_call_errhandler", "win_create_keyval", "win_delete_attr", "win_free_keyval", "win_get_attr",
    "win_get_name", "win_set_attr", "win_set_name", "alloc_mem", "comm_create_errhandler", "comm_get_errhandler", "comm_set_errhandler", "file_create_errhandler",
    "file_get_errhandler", "file_set_errhandler", "finalized", "free_mem", "get_address", "info_create", "info_delete", "info_dup",
    "info_free", "info_get", "info_get_nkeys", "info_get_nthkey", "info_get_valuelen", "info_set", "pack_external", "pack_external_size",
    "request_get_status", "type_create_darray", "type_create_hindexed", "type_create_hvector", "type_create_indexed_block", "type_create_resized", "type_create_struct", "type_create_subarray",
    "type_get_extent", "type_get_true_extent", "unpack_external", "win_create_errhandler", "win_get_errhandler", "win_set_errhandler", "file_open", "file_close",
    "file_delete", "file_set_size", "file_preallocate", "file_get_size", "file_get_group", "file_get_amode", "file_set_info", "file_get_info",
    "file_set_view", "file_get_view", "file_read_at", "file_read_at_all", "file_write_at", "file_write_at_all", "file_iread_at", "file_iwrite_at",
    "file_read", "file_read_all", "file_write", "file_write_all", "file_iread", "file_iwrite", "file_seek", "file_get_position",
    "file_get_byte_offset", "file_read_shared", "file_write_shared", "file_iread_shared", "file_iwrite_shared", "file_read_ordered", "file_write_ordered", "file_seek_shared",
    "file_get_position_shared", "file_read_at_all_begin", "file_read_at_all_end", "file_write_at_all_begin", "file_write_at_all_end", "file_read_all_begin", "file_read_all_end", "file_write_all_begin",
    "file_write_all_end", "file_read_ordered_begin", "file_read_ordered_end", "file_write_ordered_begin", "file_write_ordered_end", "file_get_type_extent", "register_datarep", "file_set_atomicity",
    "file_get_atomicity", "file_sync", "mpio_test", "mpio_wait", "mpio_testall", "mpio_waitall", "mpio_testany", "mpio_waitany",
    "mpio_waitsome", "mpio_testsome", "ibarrier", "ibcast", "ireduce", "iallreduce", "iallgather", "iallgatherv",
    "ialltoall", "ialltoallv", "ialltoallw", "igather", "igatherv", "iscatter", "iscatterv", "ireduce_scatter",
    "ireduce_scatter_block", "iscan", "iexscan", "reduce_scatter_block", "comm_split_type", "comm_idup", "comm_create_group", "mprobe",
    "improbe", "mrecv", "imrecv", "neighbor_allgather", "neighbor_alltoall", "neighbor_allgatherv", "neighbor_alltoallv", "neighbor_alltoallw",
    "ineighbor_allgather", "ineighbor_alltoall", "win_allocate", "win_allocate_shared", "win_flush", "win_flush_all", "win_lock_all", "win_unlock_all",
    "rput", "rget", "raccumulate", "get_accumulate", "fetch_and_op", "compare_and_swap", "type_size_x", "get_elements_x",
    "file_iread_all", "file_iwrite_all", "file_iread_at_all", "file_iwrite_at_all", "session_init", "session_finalize", "unknown", "compute", "comm_define",
    "cancel_outcome",
];

pub const F_SEND: Func = 0;
pub const F_RECV: Func = 1;
pub const F_BSEND: Func = 3;
pub const F_SSEND: Func = 4;
pub const F_RSEND: Func = 5;
pub const F_ISEND: Func = 8;
pub const F_IBSEND: Func = 9;
pub const F_ISSEND: Func = 10;
pub const F_IRSEND: Func = 11;
pub const F_IRECV: Func = 12;
pub const F_WAIT: Func = 13;
pub const F_TEST: Func = 14;
pub const F_WAITANY: Func = 16;
pub const F_TESTANY: Func = 17;
pub const F_WAITALL: Func = 18;
pub const F_TESTALL: Func = 19;
pub const F_WAITSOME: Func = 20;
pub const F_TESTSOME: Func = 21;
pub const F_REQUEST_FREE: Func = 15;
pub const F_SENDRECV: Func = 33;
pub const F_SENDRECV_REPLACE: Func = 34;
pub const F_BARRIER: Func = 52;
pub const F_BCAST: Func = 53;
pub const F_REDUCE: Func = 62;
pub const F_ALLREDUCE: Func = 65;
pub const F_ALLGATHER: Func = 58;
pub const F_ALLGATHERV: Func = 59;
pub const F_ALLTOALL: Func = 60;
pub const F_ALLTOALLV: Func = 61;
pub const F_ALLTOALLW: Func = 155;
pub const F_GATHER: Func = 54;
pub const F_GATHERV: Func = 55;
pub const F_SCATTER: Func = 56;
pub const F_SCATTERV: Func = 57;
pub const F_REDUCE_SCATTER: Func = 66;
pub const F_REDUCE_SCATTER_BLOCK: Func = 307;
pub const F_COMM_SPLIT: Func = 86;
pub const F_COMM_DUP: Func = 84;
pub const F_COMM_FREE: Func = 87;
pub const F_INIT: Func = 124;
pub const F_INIT_THREAD: Func = 171;
pub const F_FINALIZE: Func = 125;
pub const F_UNKNOWN: Func = 342;
pub const F_COMPUTE: Func = 343;
/// Pseudo-function of communicators a trace defines up front (OTF2 definitions).
pub const F_COMM_DEFINE: Func = 344;
/// Pseudo-function of a cancelled request's outcome, written by the tracer after the call that
/// completed the request.
pub const F_CANCEL_OUTCOME: Func = 345;
pub const F_CANCEL: Func = 24;
pub const F_TEST_CANCELLED: Func = 25;
pub const F_SCAN: Func = 67;
pub const F_EXSCAN: Func = 156;

/// Pseudo-functions: records that are not MPI calls (not counted as calls in `TraceInfo`).
pub fn is_pseudo(id: Func) -> bool {
    id == F_COMPUTE || id == F_COMM_DEFINE || id == F_CANCEL_OUTCOME
}

/// Whether `name` (a [`FUNC_NAMES`] entry) is a call with effects the simulator does not
/// model: persistent requests, dynamic processes, intercommunicators, one-sided communication,
/// generalized requests, I/O. Every reader reports these as unsupported.
pub(crate) fn is_unmodelled(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "send_init",
        "bsend_init",
        "ssend_init",
        "rsend_init",
        "recv_init",
        "start",
        "startall",
        "comm_spawn",
        "comm_spawn_multiple",
        "comm_accept",
        "comm_connect",
        "comm_join",
        "comm_disconnect",
        "intercomm_create",
        "intercomm_merge",
        "accumulate",
        "get",
        "put",
        "grequest_start",
        "grequest_complete",
    ];
    NAMES.contains(&name) || name.starts_with("file_") || name.starts_with("win_")
}

/// The id of an MPI name (lower-case, without `MPI_`), if known.
pub fn func_id(name: &str) -> Option<Func> {
    FUNC_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|i| i as Func)
}

/// The name of a function id (`unknown` for ids past the table).
pub fn func_name(id: Func) -> &'static str {
    FUNC_NAMES.get(id as usize).copied().unwrap_or("unknown")
}
