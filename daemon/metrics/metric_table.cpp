// SPDX-License-Identifier: Apache-2.0
#include "metric_table.hpp"

#include <array>

namespace cxlpool::daemon {
namespace {

constexpr MetricType C = MetricType::kCounter;
constexpr MetricType G = MetricType::kGauge;
constexpr MetricType H = MetricType::kHistogram;
constexpr double kNs = 1e-9;

// Rows in the order the daemon reports its counters (collect_counters()).
// clang-format off
constexpr MetricSpec kTable[] = {
  // The daemon and its control socket.
  {"daemon.uptime_seconds", "cxlpool_daemon_uptime_seconds", G, "seconds", 1, "Seconds since cxlpoold started."},
  {"daemon.reloads", "cxlpool_daemon_reloads_total", C, "", 1, "Configuration reloads (SIGHUP)."},
  {"clients.connected", "cxlpool_clients_connected", G, "", 1, "Control connections open now."},
  {"clients.accepted", "cxlpool_clients_accepted_total", C, "", 1, "Control connections accepted."},
  {"clients.refused", "cxlpool_clients_refused_total", C, "", 1, "Control connections refused, for any reason."},
  {"clients.refused_per_uid", "cxlpool_clients_refused_per_uid_total", C, "", 1, "Connections refused by max_clients_per_uid."},
  {"clients.refused_reserved", "cxlpool_clients_refused_reserved_total", C, "", 1, "Connections refused because the remaining slots are kept for admins."},
  {"clients.closed", "cxlpool_clients_closed_total", C, "", 1, "Control connections closed."},
  // The sum of control.requests_{type}: Prometheus sums the labelled series.
  {"control.requests", "", C, "", 1, ""},
  {"control.request_errors", "cxlpool_control_request_errors_total", C, "", 1, "Control requests answered with an error."},
  {"control.malformed_messages", "cxlpool_control_malformed_messages_total", C, "", 1, "Control messages that could not be decoded (the connection is closed)."},
  {"control.admin_denied", "cxlpool_control_admin_denied_total", C, "", 1, "Admin requests refused to a client that is not an admin."},
  {"control.requests_{type}", "cxlpool_control_requests_total", C, "", 1, "Control requests received, by request type."},
  {"control.request_duration.{type}", "cxlpool_control_request_duration_seconds", H, "seconds", kNs, "Time the event loop spent handling a control request and sending its reply, by request type (a deferred reply is not waited for)."},
  // The region pool.
  {"pool.regions", "cxlpool_pool_regions", G, "", 1, "Regions that exist now."},
  {"pool.allocated_bytes", "cxlpool_pool_allocated_bytes", G, "bytes", 1, "Bytes of all regions that exist now."},
  {"pool.regions_created", "cxlpool_pool_regions_created_total", C, "", 1, "Regions created."},
  {"pool.regions_destroyed", "cxlpool_pool_regions_destroyed_total", C, "", 1, "Regions destroyed."},
  {"pool.created_bytes", "cxlpool_pool_created_bytes_total", C, "bytes", 1, "Bytes of the regions created."},
  {"pool.alloc_failures", "cxlpool_pool_alloc_failures_total", C, "", 1, "Region allocations that failed."},
  {"pool.quota_rejections", "cxlpool_pool_quota_rejections_total", C, "", 1, "Allocations refused by a quota."},
  {"pool.capacity_rejections", "cxlpool_pool_capacity_rejections_total", C, "", 1, "Allocations refused for want of tier capacity."},
  {"pool.placement_checks", "cxlpool_pool_placement_checks_total", C, "", 1, "Checks of where a region's pages actually are."},
  {"pool.placement_mismatches", "cxlpool_pool_placement_mismatches_total", C, "", 1, "Placement checks that found pages off their tier's node."},
  {"pool.migrations", "cxlpool_pool_migrations_total", C, "", 1, "Region migrations finished."},
  {"pool.migrated_pages", "cxlpool_pool_migrated_pages_total", C, "", 1, "Pages moved by region migrations."},
  {"pool.migrated_bytes", "cxlpool_pool_migrated_bytes_total", C, "bytes", 1, "Bytes moved by region migrations."},
  {"pool.migration_failed_pages", "cxlpool_pool_migration_failed_pages_total", C, "", 1, "Pages a region migration could not move."},
  {"pool.migration_duration", "cxlpool_pool_migration_duration_seconds", H, "seconds", kNs, "Duration of a region migration (page moves included)."},
  // Access reports from clients' rings.
  {"tiering.client.accesses", "cxlpool_tiering_client_accesses_total", C, "", 1, "Page accesses clients reported through their rings."},
  {"tiering.client.dropped", "cxlpool_tiering_client_dropped_total", C, "", 1, "Client access reports dropped (rings or table full)."},
  {"tiering.client.rejected", "cxlpool_tiering_client_rejected_total", C, "", 1, "Client access reports rejected (not the client's pages)."},
  {"tiering.client.rings", "cxlpool_tiering_client_rings", G, "", 1, "Access-report rings registered now."},
  {"tiering.client.broken_rings", "cxlpool_tiering_client_broken_rings_total", C, "", 1, "Access-report rings given up on (garbage in them)."},
  // The tiering engine.
  {"tiering.enabled", "cxlpool_tiering_enabled", G, "", 1, "1 when the tiering engine runs."},
  {"tiering.epochs", "cxlpool_tiering_epochs_total", C, "", 1, "Tiering epochs run."},
  {"tiering.last_epoch_accesses", "cxlpool_tiering_last_epoch_accesses", G, "", 1, "Accesses the last epoch saw."},
  {"tiering.promotion_period_ns", "cxlpool_tiering_promotion_period_seconds", G, "seconds", kNs, "The engine's current promotion period."},
  {"tiering.plans", "cxlpool_tiering_plans_total", C, "", 1, "Plans with pages to move."},
  {"tiering.plans_skipped", "cxlpool_tiering_plans_skipped_total", C, "", 1, "Plans skipped while the previous one still moved pages."},
  {"tiering.pages_planned", "cxlpool_tiering_pages_planned_total", C, "", 1, "Pages plans asked to move."},
  {"tiering.pages_moved", "cxlpool_tiering_pages_moved_total", C, "", 1, "Pages the engine moved."},
  {"tiering.pages_absent", "cxlpool_tiering_pages_absent_total", C, "", 1, "Planned pages gone or never faulted in when the move ran."},
  {"tiering.pages_failed", "cxlpool_tiering_pages_failed_total", C, "", 1, "Planned pages the kernel refused to move."},
  {"tiering.source_errors", "cxlpool_tiering_source_errors_total", C, "", 1, "Errors collecting accesses from a source."},
  {"tiering.tier.{tier}.promotions", "cxlpool_tiering_promotions_total", C, "", 1, "Pages promoted into the tier."},
  {"tiering.tier.{tier}.demotions", "cxlpool_tiering_demotions_total", C, "", 1, "Pages demoted into the tier."},
  {"tiering.tier.{tier}.bytes_promoted", "cxlpool_tiering_promoted_bytes_total", C, "bytes", 1, "Bytes promoted into the tier."},
  {"tiering.tier.{tier}.bytes_demoted", "cxlpool_tiering_demoted_bytes_total", C, "bytes", 1, "Bytes demoted into the tier."},
  {"tiering.tier.{tier}.rate_limit_hits", "cxlpool_tiering_rate_limit_hits_total", C, "", 1, "Epochs whose moves the tier's rate limit cut short."},
  {"tiering.tier.{tier}.hot_pages", "cxlpool_tiering_hot_pages", G, "", 1, "Pages of the tier found hot in the last epoch."},
  {"tiering.tier.{tier}.accesses", "cxlpool_tiering_epoch_accesses", G, "", 1, "Accesses to the tier in the last epoch."},
  {"tiering.tier.{tier}.bandwidth_bps", "cxlpool_tiering_bandwidth_bytes_per_second", G, "bytes_per_second", 1, "The tier's bandwidth in the last epoch (measured or estimated)."},
  {"tiering.source.{source}.accesses", "cxlpool_tiering_source_accesses_total", C, "", 1, "Accesses an access source delivered."},
  {"tiering.source.{source}.dropped", "cxlpool_tiering_source_dropped_total", C, "", 1, "Accesses an access source dropped."},
  // The KV store: service, views, store.
  {"kv.enabled", "cxlpool_kv_enabled", G, "", 1, "1 when the KV store is configured."},
  {"kv.started", "cxlpool_kv_started", G, "", 1, "1 once the KV store has started (on its first use)."},
  {"kv.connections", "cxlpool_kv_connections", G, "", 1, "KV ring connections open now."},
  {"kv.connections_opened", "cxlpool_kv_connections_opened_total", C, "", 1, "KV ring connections opened."},
  {"kv.connections_closed", "cxlpool_kv_connections_closed_total", C, "", 1, "KV ring connections closed."},
  {"kv.ring_requests", "cxlpool_kv_ring_requests_total", C, "", 1, "Requests taken from clients' KV rings."},
  {"kv.ring_malformed_requests", "cxlpool_kv_ring_malformed_requests_total", C, "", 1, "KV ring requests refused as malformed."},
  {"kv.ring_denied_requests", "cxlpool_kv_ring_denied_requests_total", C, "", 1, "KV ring requests refused for a namespace not opened with the right."},
  {"kv.ring_completions", "cxlpool_kv_ring_completions_total", C, "", 1, "Completions published on KV rings."},
  {"kv.ring_backlogged", "cxlpool_kv_ring_backlogged_total", C, "", 1, "Completions that waited for room in a completion queue."},
  {"kv.ring_broken", "cxlpool_kv_ring_broken_total", C, "", 1, "KV rings quarantined for breaking the ring's rules."},
  {"kv.doorbells", "cxlpool_kv_doorbells_total", C, "", 1, "Wake-ups by a client's submission eventfd."},
  {"kv.client_wakeups", "cxlpool_kv_client_wakeups_total", C, "", 1, "Wake-ups of a sleeping client."},
  {"kv.io_wakeups", "cxlpool_kv_io_wakeups_total", C, "", 1, "Wake-ups by the SSD completion eventfd."},
  {"kv.start_failures", "cxlpool_kv_start_failures_total", C, "", 1, "Failed starts of the KV store."},
  {"kv.op_duration.{op}", "cxlpool_kv_request_duration_seconds", H, "seconds", kNs, "Time from taking a KV ring request to publishing its completion, by op."},
  {"kv.views", "cxlpool_kv_views", G, "", 1, "Namespaces with views now."},
  {"kv.view_punches", "cxlpool_kv_view_punches_total", C, "", 1, "Slots taken from one namespace's view for another's."},
  {"kv.view_punch_errors", "cxlpool_kv_view_punch_errors_total", C, "", 1, "Failures taking a slot out of a view."},
  {"kv.lookups", "cxlpool_kv_lookups_total", C, "", 1, "KV lookups."},
  {"kv.lookup_keys", "cxlpool_kv_lookup_keys_total", C, "", 1, "Keys looked up."},
  {"kv.lookup_hits", "cxlpool_kv_lookup_hits_total", C, "", 1, "Looked-up keys found."},
  {"kv.gets", "cxlpool_kv_gets_total", C, "", 1, "KV gets."},
  {"kv.puts", "cxlpool_kv_puts_total", C, "", 1, "KV puts committed."},
  {"kv.put_aborts", "cxlpool_kv_put_aborts_total", C, "", 1, "KV puts abandoned before their commit."},
  {"kv.prefetches", "cxlpool_kv_prefetches_total", C, "", 1, "KV prefetches."},
  {"kv.deletes", "cxlpool_kv_deletes_total", C, "", 1, "KV deletes."},
  {"kv.leases", "cxlpool_kv_leases", G, "", 1, "Leases held now."},
  {"kv.leased_bytes", "cxlpool_kv_leased_bytes", G, "bytes", 1, "Bytes under lease now."},
  {"kv.reservations", "cxlpool_kv_reservations", G, "", 1, "Put reservations open now."},
  {"kv.quota_rejections", "cxlpool_kv_quota_rejections_total", C, "", 1, "KV requests refused by a client quota."},
  {"kv.leases_expired", "cxlpool_kv_leases_expired_total", C, "", 1, "Leases revoked after lease_timeout_ms."},
  {"kv.rejected_requests", "cxlpool_kv_rejected_requests_total", C, "", 1, "KV requests answered with a status other than ok."},
  {"kv.commit_copies_offloaded", "cxlpool_kv_commit_copies_offloaded_total", C, "", 1, "Copies of put commits (a chunk, or a piece of a large one) handed to the commit workers."},
  {"kv.commits_in_flight", "cxlpool_kv_commits_in_flight", G, "", 1, "Put commits waiting for their copies, or for DRAM slots that come back, now."},
  {"kv.puts_to_ssd", "cxlpool_kv_puts_to_ssd_total", C, "", 1, "Chunks put_commit stored on the SSD log only (the to-SSD flag)."},
  {"kv.window_lends", "cxlpool_kv_window_lends_total", C, "", 1, "Of those, chunks the SSD log wrote straight from the put window, without a copy."},
  {"kv.window_reclaims", "cxlpool_kv_window_reclaims_total", C, "", 1, "Put-window slots lent to the SSD log that it copied into its region buffer to free them early (a full window, a client gone)."},
  {"kv.puts_copied_behind", "cxlpool_kv_puts_copied_behind_total", C, "", 1, "Chunks whose put_commit was answered once their CRC was known (taken by the daemon, or declared by the writer), their copy into DRAM following the answer."},
  {"kv.copies_behind_in_flight", "cxlpool_kv_copies_behind_in_flight", G, "", 1, "Chunks whose put_commit was answered and whose copy into DRAM is not in yet, now."},
  {"kv.put_window_changed", "cxlpool_kv_put_window_changed_total", C, "", 1, "Of those with the daemon's CRC, chunks dropped because their put-window slot changed between the commit and the copy (with a declared CRC such a chunk counts in kv.put_checksum_mismatch)."},
  {"kv.put_checksum_mismatch", "cxlpool_kv_put_checksum_mismatch_total", C, "", 1, "Committed chunks not stored (or, copied behind the answer, dropped) because the bytes the daemon copied out of the put window did not match the CRC-32C the writer declared with the commit."},
  {"kv.ssd_registrations", "cxlpool_kv_ssd_registrations_total", C, "", 1, "Memory registered with the SSD device (io_uring fixed buffers): an arena slot in the view of the namespace that claimed it (once per slot and change of namespace), or a put-window slot the log writes from (at its first lend). SSD I/O on registered memory pins no pages per request, and reads into it skip the staging buffers."},
  {"kv.ssd_registration_errors", "cxlpool_kv_ssd_registration_errors_total", C, "", 1, "Registrations the device refused (RLIMIT_MEMLOCK, memory that cannot be pinned), each logged: the table of arena slots at start (once), a slot's (that tier's SSD I/O goes unregistered), a put-window slot's (every client's lends do); at most four."},
  {"kv.outcome.{status}", "cxlpool_kv_outcomes_total", C, "", 1, "KV request outcomes, by status."},
  {"kv.io_in_flight", "cxlpool_kv_io_in_flight", G, "", 1, "SSD I/Os in flight now."},
  {"kv.ssd_durable_sequence", "cxlpool_kv_ssd_durable_sequence", G, "", 1, "Sequence number up to which the SSD log is durable."},
  {"kv.ssd_writes_in_flight", "cxlpool_kv_ssd_writes_in_flight", G, "", 1, "SSD log writes in flight now."},
  {"kv.ssd_regions_sealed", "cxlpool_kv_ssd_regions_sealed_total", C, "", 1, "SSD log regions sealed."},
  {"kv.ssd_syncs", "cxlpool_kv_ssd_syncs_total", C, "", 1, "SSD log syncs."},
  {"kv.ssd_write_stalls", "cxlpool_kv_ssd_write_stalls_total", C, "", 1, "SSD log writes that waited for buffer room."},
  {"kv.ssd_lent_puts", "cxlpool_kv_ssd_lent_puts_total", C, "", 1, "Chunks the SSD log wrote from memory it did not copy: demotions from their arena slot, puts to the log from their put window (no copy)."},
  {"kv.ssd_lent_changed", "cxlpool_kv_ssd_lent_changed_total", C, "", 1, "Chunks put to the SSD log from a put window that their writer changed before the log wrote them: dropped, gets miss them."},
  {"kv.ssd_lent_reclaimed", "cxlpool_kv_ssd_lent_reclaimed_total", C, "", 1, "Lent slots (put-window or DRAM) the SSD log copied into its open region's buffer to free them before the region's write: a full window, a client gone, a commit short of DRAM slots."},
  {"kv.ssd_staged_reads", "cxlpool_kv_ssd_staged_reads_total", C, "", 1, "SSD reads that went through a registered staging buffer and were copied into their slot (kvstore.ssd_read_staging)."},
  {"kv.ssd_buffer_reads", "cxlpool_kv_ssd_buffer_reads_total", C, "", 1, "SSD reads answered from the write buffer."},
  {"kv.ssd_write_dropped", "cxlpool_kv_ssd_write_dropped_total", C, "", 1, "Demotions to SSD dropped (log full or busy)."},
  {"kv.ssd_write_errors", "cxlpool_kv_ssd_write_errors_total", C, "", 1, "SSD log write errors."},
  {"kv.ssd_verify_ns", "cxlpool_kv_ssd_verify_seconds_total", C, "seconds", kNs, "Time spent verifying records read from SSD."},
  {"kv.ssd_worker_verifies", "cxlpool_kv_ssd_worker_verifies_total", C, "", 1, "SSD reads whose CRC32C an I/O worker checked."},
  {"kv.tier.{kv_tier}.capacity_bytes", "cxlpool_kv_tier_capacity_bytes", G, "bytes", 1, "Capacity of the KV store's tier."},
  {"kv.tier.{kv_tier}.used_bytes", "cxlpool_kv_tier_used_bytes", G, "bytes", 1, "Bytes in use in the KV store's tier."},
  {"kv.tier.{kv_tier}.chunks", "cxlpool_kv_tier_chunks", G, "", 1, "Chunks in the KV store's tier now."},
  {"kv.tier.{kv_tier}.hits", "cxlpool_kv_tier_hits_total", C, "", 1, "Chunks found in the tier."},
  {"kv.tier.{kv_tier}.misses", "cxlpool_kv_tier_misses_total", C, "", 1, "Chunks looked for in the tier and not found."},
  {"kv.tier.{kv_tier}.evictions", "cxlpool_kv_tier_evictions_total", C, "", 1, "Chunks evicted from the tier."},
  {"kv.tier.{kv_tier}.promotions", "cxlpool_kv_tier_promotions_total", C, "", 1, "Chunks promoted into the tier."},
  {"kv.tier.{kv_tier}.demotions", "cxlpool_kv_tier_demotions_total", C, "", 1, "Chunks demoted into the tier."},
  {"kv.tier.{kv_tier}.admissions_rejected", "cxlpool_kv_tier_admissions_rejected_total", C, "", 1, "Chunks the SSD admission policy turned away."},
  {"kv.tier.{kv_tier}.bytes_written", "cxlpool_kv_tier_written_bytes_total", C, "bytes", 1, "Bytes written into the tier."},
  {"kv.tier.{kv_tier}.bytes_read", "cxlpool_kv_tier_read_bytes_total", C, "bytes", 1, "Bytes read from the tier."},
  {"kv.tier.{kv_tier}.errors", "cxlpool_kv_tier_errors_total", C, "", 1, "I/O or checksum errors of the tier."},
  // Model weights.
  {"weights.models", "cxlpool_weights_models", G, "", 1, "Models loaded now."},
  {"weights.loading", "cxlpool_weights_loading", G, "", 1, "Models being loaded now."},
  {"weights.region_bytes", "cxlpool_weights_region_bytes", G, "bytes", 1, "Bytes of the loaded models' regions."},
  {"weights.resident_bytes", "cxlpool_weights_resident_bytes", G, "bytes", 1, "Resident tensor bytes of the loaded models."},
  {"weights.loads", "cxlpool_weights_loads_total", C, "", 1, "Models loaded."},
  {"weights.opens", "cxlpool_weights_opens_total", C, "", 1, "Loads and opens answered from a loaded model."},
  {"weights.loads_waited", "cxlpool_weights_loads_waited_total", C, "", 1, "Loads and opens that waited for a load under way."},
  {"weights.unloads", "cxlpool_weights_unloads_total", C, "", 1, "Models unloaded."},
  {"weights.load_errors", "cxlpool_weights_load_errors_total", C, "", 1, "Model loads that failed."},
  {"weights.rejected_files", "cxlpool_weights_rejected_files_total", C, "", 1, "Malformed safetensors files refused."},
  {"weights.access_denied", "cxlpool_weights_access_denied_total", C, "", 1, "Model opens refused by the region's mode."},
  {"weights.bytes_loaded", "cxlpool_weights_loaded_bytes_total", C, "bytes", 1, "Tensor bytes copied in by loads."},
  {"weights.load_ns_total", "cxlpool_weights_load_seconds_total", C, "seconds", kNs, "Time spent loading models."},
  {"weights.parse_ns_total", "cxlpool_weights_parse_seconds_total", C, "seconds", kNs, "Time spent reading and parsing safetensors headers."},
  // Checkpoints of processes.
  {"ckpt.checkpoints", "cxlpool_ckpt_checkpoints", G, "", 1, "Checkpoints held now."},
  {"ckpt.creates", "cxlpool_ckpt_creates_total", C, "", 1, "Checkpoints made."},
  {"ckpt.restores", "cxlpool_ckpt_restores_total", C, "", 1, "Restores that started every clone asked for."},
  {"ckpt.clones", "cxlpool_ckpt_clones_total", C, "", 1, "Clones started by restores."},
  {"ckpt.removes", "cxlpool_ckpt_removes_total", C, "", 1, "Checkpoints removed."},
  {"ckpt.bytes", "cxlpool_ckpt_captured_bytes_total", C, "bytes", 1, "Image bytes captured."},
  {"ckpt.refused", "cxlpool_ckpt_refused_total", C, "", 1, "Checkpoints refused because the client may not trace the process."},
  {"ckpt.create_errors", "cxlpool_ckpt_create_errors_total", C, "", 1, "Checkpoints that failed."},
  {"ckpt.restore_errors", "cxlpool_ckpt_restore_errors_total", C, "", 1, "Restores that failed."},
  {"ckpt.capture_ns_total", "cxlpool_ckpt_capture_seconds_total", C, "seconds", kNs, "Time spent capturing processes."},
  {"ckpt.restore_ns_total", "cxlpool_ckpt_restore_seconds_total", C, "seconds", kNs, "Time spent starting restores."},
  // GPU host allocations.
  {"gpu.host_allocs", "cxlpool_gpu_host_allocs_total", C, "", 1, "Host allocations for GPUs."},
  {"gpu.host_alloc_bytes", "cxlpool_gpu_host_alloc_bytes_total", C, "bytes", 1, "Bytes of host allocations for GPUs."},
  {"gpu.host_alloc_failures", "cxlpool_gpu_host_alloc_failures_total", C, "", 1, "Host allocations for GPUs that failed."},
  {"gpu.host_alloc_quota_rejections", "cxlpool_gpu_host_alloc_quota_rejections_total", C, "", 1, "Host allocations for GPUs refused by a quota."},
  {"gpu.host_alloc_charged_bytes", "cxlpool_gpu_host_alloc_charged_bytes", G, "bytes", 1, "Bytes of host allocations for GPUs charged to clients now."},
  // The device pool.
  {"devpool.enabled", "cxlpool_devpool_enabled", G, "", 1, "1 when the device pool runs."},
  {"devpool.devices", "cxlpool_devpool_devices", G, "", 1, "Devices registered now."},
  {"devpool.devices_healthy", "cxlpool_devpool_devices_healthy", G, "", 1, "Registered devices that are healthy now."},
  {"devpool.attachments", "cxlpool_devpool_attachments", G, "", 1, "Attachments now."},
  {"devpool.hosts", "cxlpool_devpool_hosts", G, "", 1, "Hosts known now."},
  {"devpool.registrations", "cxlpool_devpool_registrations_total", C, "", 1, "Device registrations."},
  {"devpool.registrations_refused", "cxlpool_devpool_registrations_refused_total", C, "", 1, "Device registrations refused."},
  {"devpool.names_taken", "cxlpool_devpool_names_taken_total", C, "", 1, "Device registrations refused because a live device of that host/name is registered, through this daemon or another."},
  {"devpool.heartbeats", "cxlpool_devpool_heartbeats_total", C, "", 1, "Backend heartbeats."},
  {"devpool.attaches", "cxlpool_devpool_attaches_total", C, "", 1, "Attaches."},
  {"devpool.attaches_refused", "cxlpool_devpool_attaches_refused_total", C, "", 1, "Attaches refused."},
  {"devpool.detaches", "cxlpool_devpool_detaches_total", C, "", 1, "Detaches."},
  {"devpool.failovers_total", "cxlpool_devpool_failovers_total", C, "", 1, "Attachments moved to their backup or a new primary."},
  {"devpool.backups_replaced", "cxlpool_devpool_backups_replaced_total", C, "", 1, "Backups replaced."},
  {"devpool.stranded", "cxlpool_devpool_stranded_total", C, "", 1, "Attachments left without any device."},
  {"devpool.session_losses", "cxlpool_devpool_session_losses_total", C, "", 1, "Devices whose backend's connection closed."},
  {"devpool.lease_expiries", "cxlpool_devpool_lease_expiries_total", C, "", 1, "Device leases expired."},
  {"devpool.link_downs", "cxlpool_devpool_link_downs_total", C, "", 1, "Link-down reports."},
  {"devpool.admin_failovers", "cxlpool_devpool_admin_failovers_total", C, "", 1, "Failovers an admin asked for."},
  {"devpool.slots_formatted", "cxlpool_devpool_slots_formatted_total", C, "", 1, "Pod slots formatted."},
  {"devpool.table_writes", "cxlpool_devpool_table_writes_total", C, "", 1, "Writes of the pod's tables."},
  {"devpool.state_etcd", "cxlpool_devpool_state_etcd", G, "", 1, "1 when the allocator's state is the pod's, in etcd (0: this daemon's own)."},
  {"devpool.state_connected", "cxlpool_devpool_state_connected", G, "", 1, "1 while etcd answers and this daemon holds its device-pool lease (always 1 embedded)."},
  {"devpool.state_etcd_errors", "cxlpool_devpool_state_etcd_errors_total", C, "", 1, "Failed etcd requests of the device pool's state."},
  {"devpool.state_records_refused", "cxlpool_devpool_state_records_refused_total", C, "", 1, "Device-pool records in etcd that failed validation."},
  {"devpool.state_commits", "cxlpool_devpool_state_commits_total", C, "", 1, "Allocator decisions written to etcd."},
  {"devpool.state_conflicts", "cxlpool_devpool_state_conflicts_total", C, "", 1, "Decisions another daemon's change beat (decided again)."},
  {"devpool.state_resyncs", "cxlpool_devpool_state_resyncs_total", C, "", 1, "Full listings of the device pool's state."},
  {"devpool.state_republished", "cxlpool_devpool_state_republished_total", C, "", 1, "Own device-pool records written again after they went from etcd."},
  {"devpool.state_load_writes", "cxlpool_devpool_state_load_writes_total", C, "", 1, "Device records this daemon rewrote in etcd to share their load."},
  {"pod.etcd", "cxlpool_pod_etcd", G, "", 1, "1 when pod membership is kept in etcd (0: the embedded single-host pod)."},
  {"pod.connected", "cxlpool_pod_connected", G, "", 1, "1 while etcd answers and this daemon's record is published (always 1 embedded)."},
  {"pod.members", "cxlpool_pod_members", G, "", 1, "Members of the pod known now, this daemon included."},
  {"pod.joins", "cxlpool_pod_joins_total", C, "", 1, "Members that joined the pod."},
  {"pod.departures", "cxlpool_pod_departures_total", C, "", 1, "Members that left the pod (lease expired, record deleted)."},
  {"pod.etcd_errors", "cxlpool_pod_etcd_errors_total", C, "", 1, "Failed etcd requests."},
  {"pod.registrations", "cxlpool_pod_registrations_total", C, "", 1, "Leases granted with this daemon's record."},
  {"pod.keepalives", "cxlpool_pod_keepalives_total", C, "", 1, "Lease renewals."},
  {"pod.resyncs", "cxlpool_pod_resyncs_total", C, "", 1, "Full listings of the pod after a watch ended."},
  {"pod.records_refused", "cxlpool_pod_records_refused_total", C, "", 1, "Members' records that failed validation."},
  {"pod.fabric.open", "cxlpool_pod_fabric_open", G, "", 1, "1 while the transfer engine is open (etcd pods; 0 when it could not be opened or the pod is embedded)."},
  {"pod.fabric.requests", "cxlpool_pod_fabric_requests_total", C, "", 1, "Transfer requests (one-sided reads and writes) of this daemon."},
  {"pod.fabric.requests_failed", "cxlpool_pod_fabric_failed_requests_total", C, "", 1, "Transfer requests that failed after every attempt."},
  {"pod.fabric.chunks_retried", "cxlpool_pod_fabric_chunks_retried_total", C, "", 1, "Transfer chunks sent again, on another rail or after a checksum mismatch."},
  {"pod.fabric.checksum_mismatches", "cxlpool_pod_fabric_checksum_mismatches_total", C, "", 1, "Transfer chunks whose CRC-32C differed where they landed."},
  {"pod.fabric.served_checks", "cxlpool_pod_fabric_served_checks_total", C, "", 1, "Checksum requests this daemon answered as the owner of memory peers read."},
  {"pod.fabric.register_failures", "cxlpool_pod_fabric_register_failures_total", C, "", 1, "Memory ranges the transfer engine refused to register (not served to peers)."},
  {"pod.rail.{rail}.up", "cxlpool_pod_rail_up", G, "", 1, "1 while the transfer engine's rail is in service."},
  {"pod.rail.{rail}.bytes_read", "cxlpool_pod_rail_read_bytes_total", C, "bytes", 1, "Bytes read from peers over the rail."},
  {"pod.rail.{rail}.bytes_written", "cxlpool_pod_rail_written_bytes_total", C, "bytes", 1, "Bytes written to peers over the rail."},
  {"pod.rail.{rail}.chunks", "cxlpool_pod_rail_chunks_total", C, "", 1, "Transfer chunks carried by the rail."},
  {"pod.rail.{rail}.failures", "cxlpool_pod_rail_failures_total", C, "", 1, "Chunks or control messages that failed or stalled on the rail."},
  {"pod.rail.{rail}.resets", "cxlpool_pod_rail_resets_total", C, "", 1, "Times the rail was taken out of service."},
  {"pod.peer.{peer}.fetched_chunks", "cxlpool_pod_peer_fetched_chunks_total", C, "", 1, "KV chunks read from the peer."},
  {"pod.peer.{peer}.fetched_bytes", "cxlpool_pod_peer_fetched_bytes_total", C, "bytes", 1, "Bytes of KV chunks read from the peer."},
  {"pod.peer.{peer}.fetch_errors", "cxlpool_pod_peer_fetch_errors_total", C, "", 1, "Reads, checksums or control exchanges with the peer that failed."},
  {"pod.peer.{peer}.retries", "cxlpool_pod_peer_retries_total", C, "", 1, "Chunk attempts beyond the first on reads from the peer."},
  {"pod.peer.{peer}.pins_served", "cxlpool_pod_peer_pins_served_total", C, "", 1, "KV chunks pinned here for the peer's reads."},
  {"pod.kv.remote_gets", "cxlpool_pod_kv_remote_gets_total", C, "", 1, "KV gets that missed here and asked the pod's peers."},
  {"pod.kv.remote_hits", "cxlpool_pod_kv_remote_hits_total", C, "", 1, "KV chunks fetched from peers."},
  {"pod.kv.remote_misses", "cxlpool_pod_kv_remote_misses_total", C, "", 1, "KV gets that asked peers and found none holding the first missing chunk."},
  {"pod.kv.remote_bytes", "cxlpool_pod_kv_remote_bytes_total", C, "bytes", 1, "Bytes of KV chunks fetched from peers."},
  {"pod.kv.remote_errors", "cxlpool_pod_kv_remote_errors_total", C, "", 1, "KV fetches from peers that failed (a read, a checksum, a control exchange)."},
  {"pod.kv.pins_served", "cxlpool_pod_kv_pins_served_total", C, "", 1, "KV chunks pinned here for peers' reads."},
  {"pod.kv.ssd_loads_for_peers", "cxlpool_pod_kv_ssd_loads_for_peers_total", C, "", 1, "Of the chunks pinned for peers, those held only on SSD and read into an arena slot first."},
  {"pod.kv.lookup_probes", "cxlpool_pod_kv_lookup_probes_total", C, "", 1, "KV lookups that stopped short here and asked the pod's peers how much of the rest they hold."},
  {"pod.kv.lookup_probe_hits", "cxlpool_pod_kv_lookup_probe_hits_total", C, "", 1, "KV chunks peers said they hold, over those lookups."},
  {"pod.kv.lookup_probe_errors", "cxlpool_pod_kv_lookup_probe_errors_total", C, "", 1, "Probe exchanges with peers that failed."},
  {"pod.kv.probes_served", "cxlpool_pod_kv_probes_served_total", C, "", 1, "Peers' probes answered here."},
  {"pod.kv.peer_connections", "cxlpool_pod_kv_peer_connections_total", C, "", 1, "KV control connections peers opened to this daemon."},
  {"pod.kv.replications_sent", "cxlpool_pod_kv_replications_sent_total", C, "", 1, "Requests to keep copies of chunks put here that a peer accepted."},
  {"pod.kv.replicated_chunks", "cxlpool_pod_kv_replicated_chunks_total", C, "", 1, "KV chunks copied here from peers' puts (replicas)."},
  {"pod.kv.replication_errors", "cxlpool_pod_kv_replication_errors_total", C, "", 1, "Replica requests no peer answered, and copies that brought fewer chunks than asked."},
  {"pod.kv.replication_dropped", "cxlpool_pod_kv_replication_dropped_total", C, "", 1, "Copies of KV chunks not made: a full queue, too few members, a peer that refused or had no room."},
  {"pod.kv.auth_failures", "cxlpool_pod_kv_auth_failures_total", C, "", 1, "KV control connections closed because the handshake of an authenticated pod failed or was skipped (either side)."},
  // Pool tiers.
  {"tier.{tier}.capacity_bytes", "cxlpool_tier_capacity_bytes", G, "bytes", 1, "Capacity of the pool tier."},
  {"tier.{tier}.used_bytes", "cxlpool_tier_used_bytes", G, "bytes", 1, "Bytes allocated from the pool tier."},
  {"tier.{tier}.free_bytes", "cxlpool_tier_free_bytes", G, "bytes", 1, "Bytes the pool tier can still allocate."},
};
// clang-format on

// source split at its "{label}" segment, if any.
struct Pattern {
  std::string_view prefix;
  std::string_view label;  // empty: the source is matched exactly
  std::string_view suffix;
};

Pattern split(std::string_view source) {
  const size_t open = source.find('{');
  if (open == std::string_view::npos) return {source, {}, {}};
  const size_t close = source.find('}', open);
  return {source.substr(0, open), source.substr(open + 1, close - open - 1), source.substr(close + 1)};
}

}  // namespace

std::span<const MetricSpec> metric_table() { return kTable; }

std::optional<MetricMatch> match_metric(std::string_view name) {
  // Exact rows first, so that "kv.tiers"-like names never fall into a pattern.
  for (const MetricSpec& spec : kTable) {
    if (spec.source == name) return MetricMatch{&spec, {}, {}};
  }
  for (const MetricSpec& spec : kTable) {
    const Pattern p = split(spec.source);
    if (p.label.empty()) continue;
    if (name.size() <= p.prefix.size() + p.suffix.size()) continue;
    if (!name.starts_with(p.prefix) || !name.ends_with(p.suffix)) continue;
    const std::string_view value = name.substr(p.prefix.size(), name.size() - p.prefix.size() - p.suffix.size());
    // A label value is one segment of the dotted name; "kv.tier.ssd.x.hits" is no tier row.
    if (value.find('.') != std::string_view::npos) continue;
    return MetricMatch{&spec, std::string(p.label), std::string(value)};
  }
  return std::nullopt;
}

std::string_view to_string(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
  }
  return "untyped";
}

}  // namespace cxlpool::daemon
