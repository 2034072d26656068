#!/usr/bin/perl
# Hostile clients of sarenad's socket for tests/reliability/hostile_socket_test.sh. Perl (perl-base
# is Essential on Debian, so nothing is installed for it).
#   hostile_clients.pl idle SOCK N UID_BASE UIDS READY   N idle connections spread over UIDS
#                                                        non-root uids (UID_BASE..), held open
#   hostile_clients.pl big SOCK N READY                  N connections (as the caller) that send
#                                                        only a 4-byte header announcing 4 MiB
# Once every connection is made, prints "open=<still open> refused=<closed by the daemon or not
# connectable>" and creates READY, then holds the connections until killed.
use strict;
use warnings;
use Socket qw(AF_UNIX SOCK_STREAM MSG_PEEK MSG_DONTWAIT pack_sockaddr_un);
use POSIX ();

sub connect_many {
  my ($path, $n, $payload) = @_;
  my (@socks, $refused);
  $refused = 0;
  for (1 .. $n) {
    my $s;
    socket($s, AF_UNIX, SOCK_STREAM, 0) or do { $refused++; next };
    if (connect($s, pack_sockaddr_un($path))) {
      if (defined $payload) { syswrite($s, $payload) == length($payload) or do { $refused++; close $s; next } }
      push @socks, $s;
    } else { $refused++; close $s; }
  }
  select(undef, undef, undef, 1.0);  # let the daemon accept and refuse what is over its limits
  my @still;
  for my $s (@socks) {
    my $buf;
    my $r = recv($s, $buf, 1, MSG_PEEK | MSG_DONTWAIT);
    if (defined $r && length($buf) == 0) { $refused++; close $s; next }  # EOF: closed by the daemon
    if (!defined $r && !$!{EAGAIN} && !$!{EWOULDBLOCK}) { $refused++; close $s; next }
    push @still, $s;
  }
  return (\@still, $refused);
}

sub hold_forever {
  my ($ready, $line) = @_;
  $| = 1;
  print "$line\n";
  open(my $f, '>', $ready) or die "$ready: $!"; close $f;
  sleep 3600 while 1;
}

my ($mode, $path) = @ARGV[0, 1];
if ($mode eq 'big') {
  my ($n, $ready) = @ARGV[2, 3];
  my ($s, $refused) = connect_many($path, $n, pack('N', 4 * 1024 * 1024));
  hold_forever($ready, sprintf('open=%d refused=%d', scalar @$s, $refused));
}
my ($n, $uid_base, $uids, $ready) = @ARGV[2 .. 5];
my @readers;
for my $i (0 .. $uids - 1) {
  my $per = int($n / $uids) + ($i < $n % $uids ? 1 : 0);
  pipe(my $r, my $w) or die "pipe: $!";
  my $pid = fork() // die "fork: $!";
  if ($pid == 0) {
    close $r;
    my $id = $uid_base + $i;
    POSIX::setgid($id) or die "setgid: $!";
    $) = "$id $id";
    POSIX::setuid($id) or die "setuid: $!";
    my ($s, $refused) = connect_many($path, $per);
    syswrite($w, sprintf("%d %d\n", scalar @$s, $refused));
    sleep 3600 while 1;
  }
  close $w;
  push @readers, $r;
}
my ($open, $refused) = (0, 0);
for my $r (@readers) {
  my $line = <$r> // "0 0\n";
  my ($o, $f) = split ' ', $line;
  $open += $o; $refused += $f;
}
hold_forever($ready, "open=$open refused=$refused");
