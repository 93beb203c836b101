! Fortran test program for the tracer (mpif.h bindings through `use mpi`): the same shapes as
! ring.c, fewer of them. crates/tracewatt-trace/tests/tracer.rs checks the counts and sizes.
program ring
  use mpi
  implicit none
  integer, parameter :: n = 500, iters = 3
  integer :: rank, nprocs, ierr, nxt, prv, it, half
  integer :: reqs(2)
  double precision :: a(n), b(n)
  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, nprocs, ierr)
  a = rank
  nxt = mod(rank + 1, nprocs)
  prv = mod(rank + nprocs - 1, nprocs)
  do it = 1, iters
    if (mod(rank, 2) == 0) then
      call mpi_send(a, n, MPI_DOUBLE_PRECISION, nxt, it, MPI_COMM_WORLD, ierr)
      call mpi_recv(b, n, MPI_DOUBLE_PRECISION, prv, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call mpi_recv(b, n, MPI_DOUBLE_PRECISION, prv, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call mpi_send(a, n, MPI_DOUBLE_PRECISION, nxt, it, MPI_COMM_WORLD, ierr)
    end if
    call mpi_irecv(b, 50, MPI_INTEGER, prv, 10, MPI_COMM_WORLD, reqs(1), ierr)
    call mpi_isend(a, 50, MPI_INTEGER, nxt, 10, MPI_COMM_WORLD, reqs(2), ierr)
    call mpi_waitall(2, reqs, MPI_STATUSES_IGNORE, ierr)
    call mpi_allreduce(a, b, 10, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    call mpi_barrier(MPI_COMM_WORLD, ierr)
  end do
  call mpi_pcontrol(0)
  call mpi_bcast(a, 20, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call mpi_comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call mpi_allreduce(a, b, 4, MPI_DOUBLE_PRECISION, MPI_SUM, half, ierr)
  ! A wildcard receive no rank sends to, cancelled (as HPCC's RandomAccess ends), and a scan.
  call mpi_irecv(b, 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, reqs(1), ierr)
  call mpi_cancel(reqs(1), ierr)
  call mpi_wait(reqs(1), MPI_STATUS_IGNORE, ierr)
  call mpi_scan(a, b, 3, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpi_finalize(ierr)
end program ring
