import { defineRoom } from '../room.js';
import routes from './routes.js';
import { ReferralSettingsService } from './service.js';

declare module '../services.js' {
  interface Services {
    referralSettings: ReferralSettingsService;
  }
}

/** The referral program settings of the spec. */
export const referralSettingsRoom = defineRoom({
  name: 'referralSettings',
  routes,
  service: ({ db, services, uow }) => new ReferralSettingsService(db, uow, services.accounts, services.activityTypes),
});
