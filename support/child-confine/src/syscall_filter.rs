//! The child's seccomp filters: the system calls a template engine never needs fail with
//! `EPERM`; everything else (memory, threads, futexes, the pipes, time, exit) is allowed.
//! A second filter answers `clone3` with `ENOSYS`, so that the C library starts its threads
//! with `clone`, whose flags the first filter reads (a `clone` that starts a process fails).
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};
use std::collections::BTreeMap;

/// Why the filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// The target architecture has no filter here.
    #[error("no seccomp filter for the architecture {0}")]
    Architecture(&'static str),
    /// The filter did not compile or install.
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccompiler::Error),
    /// A rule of the filter is malformed.
    #[error("seccomp rule: {0}")]
    Rule(#[from] seccompiler::BackendError),
}

/// Refused outright: sockets, exec, other processes' memory, every change to the filesystem,
/// anonymous executable files, mounts and namespaces, kernel facilities a template has no use
/// for (io_uring, whose operations pass by this filter; BPF; perf; user faults; keys;
/// modules).
const DENIED: &[libc::c_long] = &[
    libc::SYS_socket,
    libc::SYS_socketpair,
    libc::SYS_connect,
    libc::SYS_bind,
    libc::SYS_listen,
    libc::SYS_execve,
    libc::SYS_execveat,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_open,
    libc::SYS_pidfd_getfd,
    libc::SYS_renameat,
    libc::SYS_renameat2,
    libc::SYS_unlinkat,
    libc::SYS_mkdirat,
    libc::SYS_linkat,
    libc::SYS_symlinkat,
    libc::SYS_mknodat,
    libc::SYS_truncate,
    libc::SYS_ftruncate,
    libc::SYS_fallocate,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    libc::SYS_fchmodat2,
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    libc::SYS_utimensat,
    libc::SYS_openat2,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_memfd_create,
    libc::SYS_memfd_secret,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_mount_setattr,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_personality,
];

/// The x86-64 forms of the same calls (other architectures only have the `…at` forms and
/// `clone`).
#[cfg(target_arch = "x86_64")]
const DENIED_LEGACY: &[libc::c_long] = &[
    libc::SYS_fork,
    libc::SYS_vfork,
    libc::SYS_rename,
    libc::SYS_unlink,
    libc::SYS_rmdir,
    libc::SYS_mkdir,
    libc::SYS_link,
    libc::SYS_symlink,
    libc::SYS_mknod,
    libc::SYS_creat,
    libc::SYS_chmod,
    libc::SYS_chown,
    libc::SYS_lchown,
    libc::SYS_utime,
    libc::SYS_utimes,
    libc::SYS_futimesat,
];
#[cfg(not(target_arch = "x86_64"))]
const DENIED_LEGACY: &[libc::c_long] = &[];

/// Open flags that write, create or truncate (`O_TMPFILE` without its `O_DIRECTORY` part).
const WRITING_OPEN_FLAGS: &[libc::c_int] = &[
    libc::O_WRONLY,
    libc::O_RDWR,
    libc::O_CREAT,
    libc::O_TRUNC,
    libc::O_TMPFILE & !libc::O_DIRECTORY,
];

/// Installs the filters on the calling thread (the threads it starts later inherit them).
///
/// MUST run last in the confinement (it refuses calls the steps before it make) and after
/// `no_new_privs`, while the process has a single thread. A kernel without seccomp filters is
/// no error: `Ok(false)`.
pub(crate) fn install() -> Result<bool, FilterError> {
    let (denied, threads) = (program()?, clone3_unsupported()?);
    if !apply(&denied)? {
        return Ok(false);
    }
    apply(&threads)
}

/// Installs one filter; `Ok(false)` when the kernel has no seccomp filters.
fn apply(program: &BpfProgram) -> Result<bool, FilterError> {
    match seccompiler::apply_filter(program) {
        Ok(()) => Ok(true),
        Err(seccompiler::Error::Seccomp(e) | seccompiler::Error::Prctl(e))
            if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::ENOSYS) =>
        {
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// The compiled filter.
fn program() -> Result<BpfProgram, FilterError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = DENIED
        .iter()
        .chain(DENIED_LEGACY)
        .map(|nr| (*nr, Vec::new()))
        .collect();
    rules.insert(libc::SYS_openat, writing_open(2)?);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_open, writing_open(1)?);
    rules.insert(libc::SYS_clone, vec![new_process()?]);
    compile(rules, libc::EPERM)
}

/// `clone3` answers `ENOSYS` (the C library then uses `clone`).
fn clone3_unsupported() -> Result<BpfProgram, FilterError> {
    compile(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
    )
}

/// A filter that fails the calls `rules` match with `errno` and allows every other.
fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    errno: libc::c_int,
) -> Result<BpfProgram, FilterError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| FilterError::Architecture(std::env::consts::ARCH))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

/// A `clone` without `CLONE_THREAD` (its flags are the first argument): a new process.
fn new_process() -> Result<SeccompRule, FilterError> {
    let thread = libc::CLONE_THREAD as u64;
    let flags = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(thread),
        0,
    )?;
    Ok(SeccompRule::new(vec![flags])?)
}

/// Rules that match an open whose flags (argument `flags_arg`) carry any of
/// [`WRITING_OPEN_FLAGS`] (the rules of a call match when any one does).
fn writing_open(flags_arg: u8) -> Result<Vec<SeccompRule>, FilterError> {
    WRITING_OPEN_FLAGS
        .iter()
        .map(|flag| {
            let bit = *flag as u64;
            let has = SeccompCondition::new(
                flags_arg,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )?;
            Ok(SeccompRule::new(vec![has])?)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile() {
        let program = program().expect("a filter");
        assert!(program.len() > DENIED.len());
        assert!(!clone3_unsupported().expect("a filter").is_empty());
    }
}
