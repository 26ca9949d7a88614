import { defineRoom } from '../room.js';
import { JobsService } from './service.js';

declare module '../services.js' {
  interface Services {
    jobs: JobsService;
  }
}

/** Work that runs later or on a schedule, on any process (the JobRunner claims it). */
export const jobsRoom = defineRoom({
  name: 'jobs',
  service: ({ db, clock }) => new JobsService(db, clock),
});
