import { describe, expect, it } from 'vitest';
import { humanMessage } from '../../src/admin/form.js';

describe('the console words the API’s messages for people', () => {
  const labels = { name: 'Name', variable_points_step: 'Step', 'reward.image_url': 'Image' };

  it.each([
    // A plain English word that is also a field name stays a word.
    ['must name at least one scope', 'This must name at least one scope.'],
    ['must be a multiple of variable_points_step (5)', 'This must be a multiple of “Step” (5).'],
    ['reward.image_url is required', '“Image” is required.'],
    // Part of a longer identifier is not replaced.
    ['must be below max_variable_points_step_count', 'This must be below max_variable_points_step_count.'],
  ])('%s', (message, expected) => {
    expect(humanMessage(message, { labels, points: null })).toBe(expected);
  });
});
